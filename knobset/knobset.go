// Package knobset changes the running kernel's RCU and networking knobs
// (sysfs module parameters, /sys/kernel/rcu_*, a few /proc/sys files) and
// guarantees that each is put back.
//
// Invariants:
//   - Before a knob is written, the change (the file, its value before, the
//     value to write) is recorded in a restore record, Dir/knobs-restore.json,
//     written with safefile.Replace (a temporary file renamed over it, never
//     through a link). A process killed with a knob changed (SIGKILL, a
//     crash) leaves the record; ApplyPending, which every ndst command runs
//     first, puts the knobs back and says so.
//   - A Session holds Dir/knobs.lock (flock) while it lives, so two ndst
//     never change knobs at once and ApplyPending never restores under a
//     live owner: a record whose lock is held is its owner's to restore.
//   - Only the files ndst knows as knobs can be written (Allowed): a record
//     cannot make ndst write anywhere else, and a record not owned by root
//     (or by this user) or writable by others is refused, never applied.
//   - A session puts its knobs back whatever they read (the kernel adjusts
//     some as it uses them). A killed ndst's record, applied later, puts a
//     knob back only while it still holds what ndst wrote: one changed since
//     is left as it is, and the restore says so.
//   - A knob that cannot be written (read-only at runtime, not root, a
//     read-only /sys as in containers) is refused with the reason before
//     anything is recorded or written (a *NotWritableError).
package knobset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Dir holds the restore record and its lock. /run is emptied at boot, as
// the knobs are reset: a record never outlives the kernel whose knobs it
// changed.
var Dir = "/run/ndst"

const (
	recordName = "knobs-restore.json"
	lockName   = "knobs.lock"
	format     = "ndst-knob-restore/1"
	// maxRecord bounds the record read back (a few hundred bytes a knob).
	maxRecord = 64 << 10
)

// allowedRE matches the files ndst may write: the RCU parameters (rcutree.*
// and rcupdate.* under /sys/module, /sys/kernel/rcu_expedited and
// rcu_normal) and the two networking sysctls that bear on teardown.
var allowedRE = regexp.MustCompile(`^(/sys/kernel/rcu_(expedited|normal)|/sys/module/(rcutree|rcupdate)/parameters/[a-z0-9_]{1,64}|/proc/sys/net/core/netdev_unregister_timeout_secs|/proc/sys/user/max_net_namespaces)$`)

// valueRE matches a value ndst may write: a number, a boolean or a word.
var valueRE = regexp.MustCompile(`^[A-Za-z0-9_.,+-]{1,64}$`)

// Allowed reports whether path is a knob file ndst may write.
func Allowed(path string) bool { return allowedRE.MatchString(path) }

// checkValue refuses a value that is not one short word.
func checkValue(v string) error {
	if !valueRE.MatchString(v) {
		return fmt.Errorf("value %q: want a number or a word (letters, digits, _ . , + -; at most 64 bytes)", v)
	}
	return nil
}

// Change is one knob changed by a Session.
type Change struct {
	// Name is the knob's name (a boot parameter's, rcupdate.rcu_expedited).
	Name string `json:"name"`
	// Path is the file written.
	Path string `json:"path"`
	// Before is the value read before the write; Wrote the value written;
	// After the value read back after it (the kernel may round or clamp:
	// a boolean parameter reads back Y or N, jiffies_till_next_fqs is
	// capped at HZ). After is empty until the write has been read back.
	Before string `json:"before"`
	Wrote  string `json:"wrote"`
	After  string `json:"after,omitempty"`
}

// ours reports whether the knob's value v is one ndst wrote.
func (c Change) ours(v string) bool { return v == c.Wrote || (c.After != "" && v == c.After) }

// record is the restore record's content.
type record struct {
	Format string `json:"format"`
	// PID and Command name the ndst that changed the knobs.
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// BootID is /proc/sys/kernel/random/boot_id: a record of another boot
	// has nothing left to restore.
	BootID  string   `json:"boot_id"`
	Changes []Change `json:"changes"`
}

func (r *record) encode() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

// decodeRecord parses and checks a restore record.
func decodeRecord(b []byte) (*record, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var r record
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a restore record: %v", err)
	}
	if r.Format != format {
		return nil, fmt.Errorf("format %q, want %q", r.Format, format)
	}
	for _, c := range r.Changes {
		if !Allowed(c.Path) {
			return nil, fmt.Errorf("%q is not a knob ndst changes", c.Path)
		}
		for _, v := range []string{c.Before, c.Wrote} {
			if err := checkValue(v); err != nil {
				return nil, fmt.Errorf("%s: %v", c.Path, err)
			}
		}
		if c.After != "" {
			if err := checkValue(c.After); err != nil {
				return nil, fmt.Errorf("%s: %v", c.Path, err)
			}
		}
	}
	return &r, nil
}

// ErrNotWritable is wrapped by *NotWritableError.
var ErrNotWritable = errors.New("knob cannot be written")

// NotWritableError says why a knob cannot be changed on this kernel (and
// that nothing was changed).
type NotWritableError struct {
	Path   string
	Reason string
}

func (e *NotWritableError) Error() string { return e.Path + ": " + e.Reason }

// Unwrap returns ErrNotWritable.
func (e *NotWritableError) Unwrap() error { return ErrNotWritable }

// Options configure a Session.
type Options struct {
	// Command names what changes the knobs, for the record and for the
	// message of whoever restores them ("advise --verify").
	Command string
	// Notef is told each change and each restore as it is made.
	Notef func(format string, args ...any)
}

func (o *Options) notef(format string, args ...any) {
	if o.Notef != nil {
		o.Notef(format, args...)
	}
}

// Describe is a change for a person: "rcupdate.rcu_expedited
// (/sys/kernel/rcu_expedited) 0 -> 1".
func Describe(c Change, from, to string) string {
	name := c.Name
	if name == "" || name == c.Path {
		return fmt.Sprintf("%s %s -> %s", c.Path, from, to)
	}
	return fmt.Sprintf("%s (%s) %s -> %s", name, c.Path, from, to)
}

// trim is a knob file's content as a value.
func trim(b []byte) string { return strings.TrimSpace(string(b)) }

// without returns cs less the change of path.
func without(cs []Change, path string) []Change {
	return slices.DeleteFunc(slices.Clone(cs), func(c Change) bool { return c.Path == path })
}
