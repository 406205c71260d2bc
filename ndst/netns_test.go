package ndst

import (
	"strings"
	"testing"
)

func TestParseNetnsTemplate(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"ndst%d", ""},
		{"pod-%d.x", ""},
		{"%d", ""},
		{"é%d", ""},
		{"", "empty"},
		{"ndst", "no %d"},
		{"a%d%d", "exactly one %d"},
		{"a%s%d", "exactly one %d"},
		{"a/%d", "'/'"},
		{"a b%d", "' '"},
		{"..%d", `".."`},
		{strings.Repeat("n", 64) + "%d", "leaves no room"},
	} {
		got, err := ParseNetnsTemplate(tc.in)
		if tc.err != "" {
			if err == nil || !IsUsage(err) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseNetnsTemplate(%q) = %v, %v; want a usage error mentioning %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseNetnsTemplate(%q) = %v", tc.in, err)
			continue
		}
		m := got.MaxNumber()
		if name := got.Name(m); len(name) > 64 || got.Number(name) != m {
			t.Errorf("ParseNetnsTemplate(%q): Name(MaxNumber()) = %q (%d bytes), Number of it %d", tc.in, name, len(name), got.Number(name))
		}
	}
	tm := MustNetnsTemplate("ndst%d")
	for _, tc := range []struct {
		name string
		want int
	}{{"ndst1", 1}, {"ndst42", 42}, {"ndst042", -1}, {"ndst", -1}, {"ndstx", -1}, {"pod1", -1}, {"ndst99999999999", -1}} {
		if got := tm.Number(tc.name); got != tc.want {
			t.Errorf("Number(%q) = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestParseNetnsRangeAndCount(t *testing.T) {
	if a, b, err := ParseNetnsRange("1", "10"); err != nil || a != 1 || b != 10 {
		t.Errorf("ParseNetnsRange(1, 10) = %d, %d, %v", a, b, err)
	}
	for _, r := range [][2]string{{"0", "3"}, {"3", "1"}, {"-1", "2"}, {"1", "x"}, {"", "1"}, {"1", "99999999999"}} {
		if _, _, err := ParseNetnsRange(r[0], r[1]); !IsUsage(err) {
			t.Errorf("ParseNetnsRange(%q, %q) = %v, want a usage error", r[0], r[1], err)
		}
	}
	for _, s := range []string{"0", "-2", "1x", "", "99999999"} {
		if _, err := ParseNetnsCount(s); !IsUsage(err) {
			t.Errorf("ParseNetnsCount(%q) = %v, want a usage error", s, err)
		}
	}
}

func TestNetnsAddRequestNormalize(t *testing.T) {
	r := NetnsAddRequest{Count: 2, Veth: true}
	if err := r.Normalize(); err != nil || r.Template.String() != "ndst%d" || r.VethInner != "eth0" ||
		r.VethTemplate.String() != "veth%d" || r.LinkTemplate.String() != "dummy%d" {
		t.Errorf("Normalize() = %+v, %v; want the defaults filled in", r, err)
	}
	for _, bad := range []NetnsAddRequest{{Count: 0}, {Count: 1, Links: -1}, {Count: 1, Veth: true, VethInner: "lo"},
		{Count: 1, Veth: true, VethInner: "dummy7"}, {Count: MaxNetnsCount + 1}} {
		if err := bad.Normalize(); !IsUsage(err) {
			t.Errorf("Normalize(%+v) = %v, want a usage error", bad, err)
		}
	}
}

func TestValidateNetnsName(t *testing.T) {
	if err := ValidateNetnsName("ndst1"); err != nil {
		t.Error(err)
	}
	if err := ValidateNetnsName("a/b"); !IsUsage(err) {
		t.Errorf("ValidateNetnsName(a/b) = %v, want a usage error", err)
	}
}
