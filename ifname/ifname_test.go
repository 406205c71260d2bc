package ifname

import (
	"strings"
	"testing"
)

func TestParseTemplate(t *testing.T) {
	tests := []struct{ in, err string }{
		{"dummy%d", ""},
		{"d%dx", ""},
		{"abcdefghijklm%d", ""},
		{"abcdefghijklmn%d", ""},
		{"abcdefghijklmno%d", "at most 15"},
		{"eth", "no %d"},
		{"", "empty"},
		{"a%d%d", "exactly one %d"},
		{"a%s%d", "exactly one %d"},
		{"bad/%d", "refuses"},
		{"sp ace%d", "refuses"},
		{"c:%d", "refuses"},
	}
	for _, tc := range tests {
		got, err := ParseTemplate(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseTemplate(%q) = %v, %v; want an error mentioning %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseTemplate(%q) = %v", tc.in, err)
			continue
		}
		if m := got.MaxNumber(); len(got.Name(m)) > MaxLen {
			t.Errorf("ParseTemplate(%q).MaxNumber() = %d gives %q, longer than 15 bytes", tc.in, m, got.Name(m))
		}
	}
}

func TestTemplateNumberRoundTrip(t *testing.T) {
	tmpl, _ := ParseTemplate("veth%dp")
	for _, tc := range []struct {
		name string
		want int
	}{{"veth0p", 0}, {"veth42p", 42}, {"veth042p", -1}, {"vethp", -1}, {"veth4", -1}, {"eth4p", -1}, {"veth-1p", -1}} {
		if got := tmpl.Number(tc.name); got != tc.want {
			t.Errorf("Number(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// FuzzParseTemplate: never panics; an accepted template yields valid names
// for its whole number range, and parses back its own names.
func FuzzParseTemplate(f *testing.F) {
	for _, s := range []string{"dummy%d", "%d", "a%d%d", "abcdefghijklmno%d", "x/%d", "%dz", "%%d", "\x00%d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tmpl, err := ParseTemplate(s)
		if err != nil {
			return
		}
		for _, n := range []int{0, 7, tmpl.MaxNumber()} {
			name := tmpl.Name(n)
			if err := ValidateName(name); err != nil {
				t.Fatalf("ParseTemplate(%q) accepted, but Name(%d) = %q is invalid: %v", s, n, name, err)
			}
			if got := tmpl.Number(name); got != n {
				t.Fatalf("ParseTemplate(%q): Number(Name(%d)) = %d", s, n, got)
			}
		}
	})
}

func TestValidateName(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"eth0", ""}, {"abcdefghijklmno", ""}, {"", "empty"}, {"abcdefghijklmnop", "at most 15"},
		{".", "reserved"}, {"..", "reserved"}, {"a b", "refuses"}, {"a\xa0b", "refuses"}, {"a\x7f", "refuses"},
	} {
		err := ValidateName(tc.in)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ValidateName(%q) = %v, want an error mentioning %q (none if empty)", tc.in, err, tc.err)
		}
	}
}
