package ndst

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParseCount(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  string
	}{
		{"1", 1, ""},
		{"1000", 1000, ""},
		{"16777216", MaxCount, ""},
		{"0", 0, "at least 1"},
		{"-5", 0, "negative"},
		{"abc", 0, "not a decimal"},
		{"12x", 0, "not a decimal"},
		{" 12", 0, "not a decimal"},
		{"+3", 0, "not a decimal"},
		{"0x10", 0, "not a decimal"},
		{"", 0, "empty"},
		{"16777217", 0, "too large"},
		{"99999999999", 0, "at most 16777216"},
		{"99999999999999999999999", 0, "at most 16777216"},
	}
	for _, tc := range tests {
		got, err := ParseCount(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("ParseCount(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !IsUsage(err) {
			t.Errorf("ParseCount(%q) = %d, %v; want a usage error mentioning %q", tc.in, got, err, tc.err)
		}
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		a, b        string
		start, stop int
		err         string
	}{
		{"1", "1000", 1, 1000, ""},
		{"7", "7", 7, 7, ""},
		{"5", "1", 0, 0, "reversed"},
		{"0", "3", 0, 0, "at least 1"},
		{"1", "-2", 0, 0, "negative"},
		{"1", "2147483648", 0, 0, "at most 2147483647"},
		{"1", "2147483647", 1, 1<<31 - 1, ""},
		{"a", "2", 0, 0, "not a decimal"},
	}
	for _, tc := range tests {
		s, e, err := ParseRange(tc.a, tc.b)
		if tc.err == "" {
			if err != nil || s != tc.start || e != tc.stop {
				t.Errorf("ParseRange(%q, %q) = %d, %d, %v; want %d, %d", tc.a, tc.b, s, e, err, tc.start, tc.stop)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseRange(%q, %q) = %d, %d, %v; want an error mentioning %q", tc.a, tc.b, s, e, err, tc.err)
		}
	}
}

// TestParseTemplateIsUsage: the driver's ParseTemplate classifies every
// refusal as a usage error (exit status 2) and keeps ifname's message.
func TestParseTemplateIsUsage(t *testing.T) {
	if _, err := ParseTemplate("eth"); err == nil || !IsUsage(err) || !strings.Contains(err.Error(), "no %d") {
		t.Errorf("ParseTemplate(%q) error = %v, want a usage error mentioning %q", "eth", err, "no %d")
	}
	if got, err := ParseTemplate("dummy%d"); err != nil || got.Name(3) != "dummy3" {
		t.Errorf("ParseTemplate(%q) = %v, %v; want dummy3 for 3", "dummy%d", got, err)
	}
}

// FuzzParseCount: never panics; accepts exactly the canonical decimals in
// range, and an accepted input round-trips.
func FuzzParseCount(f *testing.F) {
	for _, s := range []string{"1", "0", "-5", "abc", "99999999999", "16777216", "007", "1e3", "１"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCount(s)
		if err != nil {
			if !IsUsage(err) {
				t.Fatalf("ParseCount(%q) returned a non-usage error %v", s, err)
			}
			return
		}
		if n < 1 || n > MaxCount {
			t.Fatalf("ParseCount(%q) = %d, outside [1, %d]", s, n, MaxCount)
		}
		if back, _ := strconv.Atoi(strings.TrimLeft(s, "0")); back != n {
			t.Fatalf("ParseCount(%q) = %d, which does not round-trip", s, n)
		}
	})
}

// FuzzParseRange: never panics; an accepted range is 1 <= start <= stop.
func FuzzParseRange(f *testing.F) {
	for _, p := range [][2]string{{"1", "1000"}, {"5", "1"}, {"0", "0"}, {"1", "2147483648"}, {"-1", "3"}} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		s, e, err := ParseRange(a, b)
		if err != nil {
			return
		}
		if s < 1 || s > e || e > 1<<31-1 {
			t.Fatalf("ParseRange(%q, %q) = %d, %d", a, b, s, e)
		}
	})
}

func TestCheckRange(t *testing.T) {
	for _, tc := range []struct {
		start, stop int
		ok          bool
	}{{1, 1, true}, {1, 1<<31 - 1, true}, {0, 5, false}, {5, 4, false}, {-1, -1, false}, {1, 1 << 31, false}} {
		err := CheckRange(tc.start, tc.stop)
		var u *UsageError
		if (err == nil) != tc.ok || (err != nil && !errors.As(err, &u)) {
			t.Errorf("CheckRange(%d, %d) = %v, want ok %v (a usage error otherwise)", tc.start, tc.stop, err, tc.ok)
		}
	}
}
