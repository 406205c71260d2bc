package nlbackend

import (
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

func TestValidateNetns(t *testing.T) {
	tests := []struct {
		name    string
		wantErr string // "" for valid
	}{
		{"ndst", ""},
		{"a", ""},
		{"ndst-test_1.2", ""},
		{"A.b-C_9", ""},
		{strings.Repeat("x", 64), ""},
		{"", "empty"},
		{".", "reserved"},
		{"..", `".."`},
		{"a..b", `".."`},
		{"../etc", `".."`},
		{"x/../etc", `".."`},
		{"x/etc", "'/' (U+002F)"},
		{"a/b", "'/'"},
		{"a b", "' ' (U+0020)"},
		{"ns\x00", `'\x00'`},
		{"ns;rm", "';'"},
		{"ünï", ""},
		{"ndst日本", ""},
		{"nu\u0308", ""}, // decomposed ü
		{"ns\u202e", `'\u202e' (U+202E)`},
		{"ns\xc3", "not valid UTF-8 (byte 0xc3 at offset 2)"},
		{"ns\xffa", "not valid UTF-8 (byte 0xff at offset 2)"},
		{strings.Repeat("x", 65), "at most 64"},
	}
	for _, tt := range tests {
		err := ValidateNetns(tt.name)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateNetns(%q) = %v, want nil", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !ndst.IsUsage(err) {
			t.Errorf("ValidateNetns(%q) = %v, want a usage error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestValidateKind(t *testing.T) {
	for _, k := range []string{"", "dummy", "ifb", "veth"} {
		if err := ValidateKind(k); err != nil {
			t.Errorf("ValidateKind(%q) = %v, want nil", k, err)
		}
	}
	for _, k := range []string{"bridge", "Dummy", "veth0", " "} {
		if err := ValidateKind(k); err == nil || !ndst.IsUsage(err) {
			t.Errorf("ValidateKind(%q) = %v, want a usage error", k, err)
		}
	}
}

func TestNormalizeDefaults(t *testing.T) {
	o, err := Options{}.normalize()
	if err != nil {
		t.Fatalf("Options{}.normalize() = %v, want nil", err)
	}
	if o.Netns != "ndst" || o.Kind != "dummy" || o.Logger == nil {
		t.Errorf("Options{}.normalize() = Netns %q Kind %q Logger %v, want ndst, dummy, non-nil", o.Netns, o.Kind, o.Logger)
	}
	if _, err := (Options{Netns: "a/b"}).normalize(); !ndst.IsUsage(err) {
		t.Errorf("Options{Netns: a/b}.normalize() = %v, want a usage error", err)
	}
	if _, err := (Options{Kind: "bond"}).normalize(); !ndst.IsUsage(err) {
		t.Errorf("Options{Kind: bond}.normalize() = %v, want a usage error", err)
	}
}

func TestOwned(t *testing.T) {
	tests := []struct {
		g    uint32
		want bool
	}{
		{0, false}, {1, false}, {4242, false},
		{GroupOwned, true}, {OwnedGroupMin, true}, {OwnedGroupMax, true},
		{OwnedGroupMin - 1, false}, {OwnedGroupMax + 1, false},
	}
	for _, tt := range tests {
		if got := Owned(tt.g); got != tt.want {
			t.Errorf("Owned(%#x) = %v, want %v", tt.g, got, tt.want)
		}
	}
}
