package ndst

import (
	"strconv"
	"strings"
)

// IFNAMSIZ is the kernel's interface-name buffer size, including the NUL:
// names are at most IFNAMSIZ-1 = 15 bytes.
const IFNAMSIZ = 16

// MaxCount bounds "add N": the ifindex space is 31 bits, and the name
// allocator's %d space is bounded too, so anything beyond this cannot be
// represented by either backend.
const MaxCount = 1 << 24

// Template is a validated name template with exactly one %d.
type Template struct {
	Prefix, Suffix string
}

// DefaultTemplate is the template used when none is given.
const DefaultTemplate = "dummy%d"

// ParseTemplate validates a name template: exactly one %d, no other %
// directive, and a name that fits the kernel's rules (at most 15 bytes once
// the number is substituted with at least one digit, no '/', no whitespace,
// no ':' and not "." or "..").
func ParseTemplate(s string) (Template, error) {
	if s == "" {
		return Template{}, Usagef("name template is empty; want something like %q", DefaultTemplate)
	}
	i := strings.Index(s, "%d")
	if i < 0 {
		return Template{}, Usagef("name template %q has no %%d; want exactly one, as in %q", s, DefaultTemplate)
	}
	prefix, suffix := s[:i], s[i+2:]
	if strings.Contains(prefix, "%") || strings.Contains(suffix, "%") {
		return Template{}, Usagef("name template %q must contain exactly one %%d and no other %% directive", s)
	}
	t := Template{Prefix: prefix, Suffix: suffix}
	if err := ValidateName(t.Name(0)); err != nil {
		return Template{}, Usagef("name template %q: %v", s, err.(*UsageError).Msg)
	}
	return t, nil
}

// String returns the template in its %d form.
func (t Template) String() string { return t.Prefix + "%d" + t.Suffix }

// Name substitutes n for %d.
func (t Template) Name(n int) string {
	return t.Prefix + strconv.Itoa(n) + t.Suffix
}

// MaxNumber is the largest n for which Name(n) still fits in 15 bytes.
func (t Template) MaxNumber() int {
	digits := IFNAMSIZ - 1 - len(t.Prefix) - len(t.Suffix)
	if digits >= 10 {
		return 1<<31 - 1
	}
	m := 1
	for range digits {
		m *= 10
	}
	return m - 1
}

// Number parses a name produced by this template and returns its number, or
// -1 when the name does not match (including non-canonical numbers such as
// "dummy01").
func (t Template) Number(name string) int {
	if len(name) <= len(t.Prefix)+len(t.Suffix) ||
		!strings.HasPrefix(name, t.Prefix) || !strings.HasSuffix(name, t.Suffix) {
		return -1
	}
	digits := name[len(t.Prefix) : len(name)-len(t.Suffix)]
	if len(digits) > 1 && digits[0] == '0' {
		return -1
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return -1
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return -1
	}
	return n
}

// NameByteOK reports whether c may appear in a device name. The kernel's
// dev_valid_name refuses '/', ':' and what its isspace() calls space (which
// includes 0xA0); ndst also refuses the other control characters, so that
// every name it creates prints safely.
func NameByteOK(c byte) bool {
	return c > ' ' && c != 0x7f && c != 0xa0 && c != '/' && c != ':'
}

// ValidateName applies the kernel's dev_valid_name rules: 1..15 bytes, not
// "." or "..", and only bytes NameByteOK accepts.
func ValidateName(name string) error {
	switch {
	case name == "":
		return Usagef("interface name is empty")
	case len(name) > IFNAMSIZ-1:
		return Usagef("interface name %q is %d bytes; the kernel allows at most %d (IFNAMSIZ-1)", name, len(name), IFNAMSIZ-1)
	case name == "." || name == "..":
		return Usagef("interface name %q is reserved", name)
	}
	for _, c := range []byte(name) {
		if !NameByteOK(c) {
			return Usagef("interface name %q contains %q, which the kernel refuses", name, c)
		}
	}
	return nil
}

// ParseCount parses the N of "add N": a strictly decimal integer in
// [1, MaxCount], with no sign, no spaces and no trailing junk.
func ParseCount(s string) (int, error) {
	n, err := parseUint(s, "count")
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, Usagef("count must be at least 1, got %q", s)
	}
	if n > MaxCount {
		return 0, Usagef("count %s is too large; at most %d devices per command", s, MaxCount)
	}
	return int(n), nil
}

// ParseRange parses "START STOP" of del: two ifindexes, 1 <= START <= STOP
// <= 2^31-1.
func ParseRange(start, stop string) (int, int, error) {
	a, err := parseUint(start, "start ifindex")
	if err != nil {
		return 0, 0, err
	}
	b, err := parseUint(stop, "stop ifindex")
	if err != nil {
		return 0, 0, err
	}
	if a == 0 {
		return 0, 0, Usagef("start ifindex must be at least 1 (ifindex 0 is never a device)")
	}
	if a > b {
		return 0, 0, Usagef("range %d %d is reversed; want START <= STOP", a, b)
	}
	return int(a), int(b), nil
}

func parseUint(s, what string) (uint64, error) {
	if s == "" {
		return 0, Usagef("%s is empty", what)
	}
	if s[0] == '-' {
		return 0, Usagef("%s must not be negative, got %q", what, s)
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, Usagef("%s %q is not a decimal number", what, s)
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n > 1<<31-1 {
		return 0, Usagef("%s %s is out of range (at most %d)", what, s, 1<<31-1)
	}
	return n, nil
}
