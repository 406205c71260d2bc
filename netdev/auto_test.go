package netdev

import (
	"strings"
	"testing"
)

func TestProfileForRelease(t *testing.T) {
	for _, tc := range []struct{ release, want, why string }{
		{"6.18.44-fc-v669", "6.18", "is line 6.18"},
		{"6.1.0-57-amd64", "6.1", "is line 6.1"},
		{"6.1.0-57-rt-amd64", "6.1", "is line 6.1"},
		{"6.8.0-45-generic", "6.6", "newest modelled line not newer"},
		{"5.4.0", "2.6.36", "newest modelled line not newer"},
		{"2.6.32-rc5", "2.6.32", "is line 2.6.32"},
		{"2.6.35.6", "2.6.33", "newest modelled line not newer"},
		{"7.2.13+deb14-amd64", "7.2", "is line 7.2"},
		{"7.5.0", "7.2", "newer than every modelled line: 7.2, the newest"},
		{"7.1.4", "6.18", "the next line, 7.2, has changes whose first release was not identified"},
		{"6.19.2", "6.18", "newest modelled line not newer"},
	} {
		got, why, err := ProfileForRelease(tc.release)
		if err != nil || got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("ProfileForRelease(%q) = %q, %q, %v; want %q and a reason with %q", tc.release, got, why, err, tc.want, tc.why)
		}
	}
	for _, bad := range []string{"2.6.30", "2.4.37", "linux", ""} {
		if got, _, err := ProfileForRelease(bad); err == nil || !strings.Contains(err.Error(), "2.6.31") {
			t.Errorf("ProfileForRelease(%q) = %q, %v; want an error naming the lines", bad, got, err)
		}
	}
}

func TestEveryLineIsThePreviousPlusItsChanges(t *testing.T) {
	for i, name := range ProfileNames {
		p := Profiles[name]
		if i > 0 && len(p.Changes) == 0 {
			t.Errorf("line %s has no changes against %s", name, ProfileNames[i-1])
		}
		for _, c := range p.Changes {
			if c.Title == "" || c.Release == "" || c.Effect == "" {
				t.Errorf("line %s: change %+v lacks a title, release or effect", name, c)
			}
		}
		if len(p.RCUs) == 0 || p.DefaultStrategy == "" || p.Lockup <= 0 {
			t.Errorf("line %s is incomplete: %+v", name, p)
		}
	}
}
