// Package ifname holds the kernel's rules for network device names and the
// name templates ("dummy%d") that both backends, the emulated registry and
// the state file share. It sits below every other ndst package and imports
// none of them.
//
// Invariants:
//   - ValidateName accepts exactly the names the kernel's dev_valid_name
//     accepts, minus control bytes: 1..15 bytes, not "." or "..", no '/',
//     ':', whitespace (including 0xA0), control bytes or DEL.
//   - A Template returned by ParseTemplate has exactly one %d and no other
//     % directive, and Name(n) is a valid name for every 0 <= n <=
//     MaxNumber(); Number(Name(n)) == n for those n, and Number returns -1
//     for any name that is not Name(n) of some such n (non-canonical numbers
//     such as "dummy01" included).
//   - Errors are plain errors whose text is meant for a person; callers
//     decide how to classify them (the driver treats them as usage errors).
package ifname

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// IFNAMSIZ is the kernel's interface-name buffer size, including the NUL:
// names are at most IFNAMSIZ-1 = 15 bytes.
const IFNAMSIZ = 16

// MaxLen is the longest device name, IFNAMSIZ-1 bytes.
const MaxLen = IFNAMSIZ - 1

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
		return Template{}, fmt.Errorf("name template is empty; want something like %q", DefaultTemplate)
	}
	i := strings.Index(s, "%d")
	if i < 0 {
		return Template{}, fmt.Errorf("name template %q has no %%d; want exactly one, as in %q", s, DefaultTemplate)
	}
	prefix, suffix := s[:i], s[i+2:]
	if strings.Contains(prefix, "%") || strings.Contains(suffix, "%") {
		return Template{}, fmt.Errorf("name template %q must contain exactly one %%d and no other %% directive", s)
	}
	t := Template{Prefix: prefix, Suffix: suffix}
	if err := ValidateName(t.Name(0)); err != nil {
		return Template{}, fmt.Errorf("name template %q: %w", s, err)
	}
	if p := HostileProblem(t.Name(0)); p != "" {
		return Template{}, fmt.Errorf("name template %q: its names %s", s, p)
	}
	return t, nil
}

// HostileProblem says why ndst does not create the device name name,
// which the kernel accepts, or "" when it does: a name beginning with '-'
// is read as an option by ip(8) and most command lines; one beginning
// with '.' is hidden from a listing of /sys/class/net; one of digits alone
// is taken for an ifindex by commands that accept either (ndst's own
// --hold HOLDER@DEVICE among them). It reports on one name; for a
// template, Name(0) speaks for every number (the prefix, and whether the
// rest is digits, are the same).
func HostileProblem(name string) string {
	switch {
	case strings.HasPrefix(name, "-"):
		return "begin with '-', which ip(8) and most command lines read as an option"
	case strings.HasPrefix(name, "."):
		return "begin with '.', which hides them from a listing of /sys/class/net"
	case name != "" && strings.Trim(name, "0123456789") == "":
		return "are all digits, which commands that take a name or an ifindex (ndst's own --hold HOLDER@DEVICE) read as an ifindex"
	}
	return ""
}

// String returns the template in its %d form.
func (t Template) String() string { return t.Prefix + "%d" + t.Suffix }

// Name substitutes n for %d.
func (t Template) Name(n int) string {
	return t.Prefix + strconv.Itoa(n) + t.Suffix
}

// MaxNumber is the largest n for which Name(n) still fits in 15 bytes.
func (t Template) MaxNumber() int {
	digits := MaxLen - len(t.Prefix) - len(t.Suffix)
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

// ByteOK reports whether c may appear in a device name. The kernel's
// dev_valid_name refuses '/', ':' and what its isspace() calls space (which
// includes 0xA0); ndst also refuses the other control characters, so that
// every name it creates prints safely.
func ByteOK(c byte) bool {
	return c > ' ' && c != 0x7f && c != 0xa0 && c != '/' && c != ':'
}

// ValidateName applies the kernel's dev_valid_name rules: 1..15 bytes, not
// "." or "..", and only bytes ByteOK accepts.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("interface name is empty")
	case len(name) > MaxLen:
		return fmt.Errorf("interface name %q is %d bytes; the kernel allows at most %d (IFNAMSIZ-1)", name, len(name), MaxLen)
	case name == "." || name == "..":
		return fmt.Errorf("interface name %q is reserved", name)
	}
	for _, c := range []byte(name) {
		if !ByteOK(c) {
			return fmt.Errorf("interface name %q contains %q, which the kernel refuses", name, c)
		}
	}
	return nil
}
