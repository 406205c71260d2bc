package netdev

import (
	"fmt"
	"strconv"
	"strings"
)

// ProfileForRelease picks the line that models a kernel release (as uname
// -r prints it: "6.18.44-fc-v669", "6.1.0-57-amd64", "2.6.32-rc5"): the
// newest line not newer than the release. It says why, or, for a release
// older than every line, fails naming the lines.
func ProfileForRelease(release string) (string, string, error) {
	v, ok := parseVersion(release)
	if !ok {
		return "", "", fmt.Errorf("kernel release %q: no version number at its start (known lines: %s)", release, strings.Join(ProfileNames, ", "))
	}
	best := ""
	for _, name := range ProfileNames {
		lv, _ := parseVersion(name)
		if compareVersion(lv, v) <= 0 {
			best = name
		}
	}
	if best == "" {
		return "", "", fmt.Errorf("kernel release %q is older than every modelled line (known: %s)", release, strings.Join(ProfileNames, ", "))
	}
	lv, _ := parseVersion(best)
	why := fmt.Sprintf("kernel %s is line %s", release, best)
	switch {
	case compareVersion(lv, v[:min(len(v), len(lv))]) == 0:
	case best == ProfileNames[len(ProfileNames)-1]:
		why = fmt.Sprintf("kernel %s is newer than every modelled line: %s, the newest, models it, with its teardown path as read at %s; changes after %s are not modelled", release, best, best, best)
	default:
		why = fmt.Sprintf("kernel %s: %s is the newest modelled line not newer than it", release, best)
		if next := nextLine(best); next != "" && unknownReleases(next) {
			why += fmt.Sprintf("; the next line, %s, has changes whose first release was not identified (between %s and %s), so some of them may be in this kernel and are not modelled", next, best, next)
		}
	}
	return best, why, nil
}

// nextLine is the line after name ("" for the newest).
func nextLine(name string) string {
	for i, n := range ProfileNames {
		if n == name && i+1 < len(ProfileNames) {
			return ProfileNames[i+1]
		}
	}
	return ""
}

// unknownReleases reports whether a line has a change whose first release
// is not a version number ("7.x").
func unknownReleases(line string) bool {
	for _, c := range Profiles[line].Changes {
		if _, ok := parseVersion(c.Release); !ok {
			return true
		}
	}
	return false
}

// parseVersion reads the leading dotted numbers of a release: 2.6.32 (three
// parts for 2.6.x), 6.18 (two parts otherwise; the stable number does not
// choose a line).
func parseVersion(s string) ([]int, bool) {
	var v []int
	for _, part := range strings.SplitN(s, ".", 4) {
		n := 0
		digits := 0
		for digits < len(part) && part[digits] >= '0' && part[digits] <= '9' {
			digits++
		}
		if digits == 0 {
			break
		}
		n, _ = strconv.Atoi(part[:digits])
		v = append(v, n)
		if digits < len(part) {
			break
		}
	}
	if len(v) < 2 {
		return nil, false
	}
	keep := 2
	if v[0] == 2 {
		keep = 3
	}
	if len(v) > keep {
		v = v[:keep]
	}
	return v, true
}

func compareVersion(a, b []int) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}
