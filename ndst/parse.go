package ndst

import (
	"strconv"

	"github.com/ndst-project/ndst/ifname"
)

// Template is a validated device-name template; see package ifname, which
// holds the naming rules below every package that needs them.
type Template = ifname.Template

// DefaultTemplate is the template used when none is given.
const DefaultTemplate = ifname.DefaultTemplate

// MaxCount bounds "add N": the ifindex space is 31 bits, and the name
// allocator's %d space is bounded too, so anything beyond this cannot be
// represented by either backend.
const MaxCount = 1 << 24

// ParseTemplate is ifname.ParseTemplate with its error as a *UsageError: a
// template always comes from the command line or a request.
func ParseTemplate(s string) (Template, error) {
	t, err := ifname.ParseTemplate(s)
	if err != nil {
		return Template{}, &UsageError{Msg: err.Error()}
	}
	return t, nil
}

// ParseCount parses the N of "add N": a strictly decimal integer in
// [1, MaxCount], with no sign, no spaces and no trailing junk.
func ParseCount(s string) (int, error) {
	n, err := parseUint(s, "count", MaxCount)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, Usagef("count must be at least 1, got %q", s)
	}
	return int(n), nil
}

// ParseRange parses "START STOP" of del: two ifindexes, 1 <= START <= STOP
// <= 2^31-1.
func ParseRange(start, stop string) (int, int, error) {
	a, err := parseUint(start, "start ifindex", 1<<31-1)
	if err != nil {
		return 0, 0, err
	}
	b, err := parseUint(stop, "stop ifindex", 1<<31-1)
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

// parseUint parses a strictly decimal number; one above limit, however many
// digits it has, is a usage error that names limit.
func parseUint(s, what string, limit uint64) (uint64, error) {
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
	if err != nil || n > limit {
		return 0, Usagef("%s %s is too large; at most %d", what, s, limit)
	}
	return n, nil
}

// CheckRange checks a START STOP range of numbers, as every backend's del
// and netns del take it: 1 <= START <= STOP <= MaxInt32.
func CheckRange(start, stop int) error {
	if start < 1 || start > stop || stop > 1<<31-1 {
		return Usagef("range %d %d is empty, reversed or out of bounds; want 1 <= START <= STOP <= %d", start, stop, 1<<31-1)
	}
	return nil
}
