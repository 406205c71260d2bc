// Package hostknob reads the running kernel's current value of every knob
// of the catalogue (package knob): the sysfs and /proc/sys files, the
// kernel command line for boot parameters without a file, and the kernel's
// configuration for build options. It reads only; it never writes, and it
// opens only the catalogue's own files, each checked first (package
// safefile), so a read never blocks.
//
// Off Linux there is no running kernel to read: Read returns every knob as
// unreadable, saying so.
package hostknob

import (
	"strings"

	"github.com/ndst-project/ndst/knob"
)

// Reading is one knob as the running kernel shows it.
type Reading struct {
	// Name is the knob's catalogue name.
	Name string `json:"name"`
	// Value is the value in the catalogue's syntax ("" when not read).
	Value string `json:"value,omitempty"`
	// Source is where it was read: a file, "/proc/cmdline", or the
	// kernel's configuration file.
	Source string `json:"source,omitempty"`
	// Missing says why no value was read (the kernel lacks the knob, the
	// file cannot be read); "" when Value is set.
	Missing string `json:"missing,omitempty"`
}

// Read reads every catalogue knob.
func Read() []Reading {
	h := newHost()
	out := make([]Reading, 0, len(knob.Catalog))
	for _, d := range knob.Catalog {
		out = append(out, h.read(d))
	}
	return out
}

// Values returns the readings that have a value, as NAME=VALUE words.
func Values(rs []Reading) []string {
	var out []string
	for _, r := range rs {
		if r.Missing == "" && r.Value != "" {
			out = append(out, r.Name+"="+r.Value)
		}
	}
	return out
}

// normalize turns a file's text into the catalogue's syntax: module bool
// parameters print Y or N, CPU lists "(null)" for none, and an unset
// ULONG_MAX "use the default" (jiffies_till_sched_qs) is not a value.
func normalize(d *knob.Def, raw string) (string, string) {
	s := strings.TrimSpace(raw)
	switch {
	case d.Type == knob.CPUList && (s == "(null)" || s == ""):
		s = "none"
	case d.Type == knob.Int && s == "18446744073709551615":
		return "", "ULONG_MAX: not set, the kernel computes it"
	}
	v, err := d.Parse(s)
	if err != nil {
		return "", "unreadable value " + strings.TrimSpace(raw) + ": " + err.Error()
	}
	return v.String(), ""
}

// cmdlineValue is the last NAME=VALUE of a kernel command line before
// "--" (what follows goes to init); ok is false when NAME is absent.
func cmdlineValue(cmdline, name string) (string, bool) {
	val, ok := "", false
	for _, f := range strings.Fields(cmdline) {
		if f == "--" {
			break
		}
		if f == name {
			val, ok = "", true // rcu_nocbs without a list (6.x): none yet
			continue
		}
		if v, found := strings.CutPrefix(f, name+"="); found {
			val, ok = v, true
		}
	}
	return val, ok
}
