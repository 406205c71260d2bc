package knobset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ndst-project/ndst/safefile"
)

// Session changes knobs and puts them back. Its methods may be called from
// several goroutines (a signal handler's restore may race the main flow's).
type Session struct {
	o    Options
	mu   sync.Mutex
	lock *os.File
	rec  record
}

// recordPath is the restore record's file.
func recordPath() string { return filepath.Join(Dir, recordName) }

// Begin starts a session: it takes the lock (an error when another ndst is
// changing knobs) and first restores what a killed one left changed.
func Begin(o Options) (*Session, error) {
	if err := ensureDir(); err != nil {
		return nil, fmt.Errorf("restore record folder: %w", err)
	}
	lock, held, err := lockFile()
	if err != nil {
		return nil, fmt.Errorf("restore record lock: %w", err)
	}
	if held {
		who := ""
		if r, err := loadRecord(); err == nil && r != nil {
			who = fmt.Sprintf(" (pid %d, %s)", r.PID, r.Command)
		}
		return nil, fmt.Errorf("another ndst%s is changing kernel knobs; try again when it is done", who)
	}
	s := &Session{o: o, lock: lock, rec: record{Format: format, PID: os.Getpid(), Command: o.Command, BootID: bootID()}}
	if err := applyLocked(o.Notef); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

// Check says why the knob at path cannot be changed (a *NotWritableError
// for this kernel's reasons), changing nothing.
func Check(path string) error { return checkKnob(path) }

// Set writes value to the knob at path (name is its boot parameter's name,
// for the messages), recording the change first. A knob that already holds
// value is not written (the Change has Wrote empty).
func (s *Session) Set(name, path, value string) (Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return Change{}, errors.New("knob session is closed")
	}
	if err := checkValue(value); err != nil {
		return Change{}, fmt.Errorf("%s: %v", name, err)
	}
	if err := checkKnob(path); err != nil {
		return Change{}, err
	}
	if slices.ContainsFunc(s.rec.Changes, func(c Change) bool { return c.Path == path }) {
		return Change{}, fmt.Errorf("%s is already changed in this session", path)
	}
	before, err := readKnob(path)
	if err != nil {
		return Change{}, fmt.Errorf("read %s: %w", path, err)
	}
	c := Change{Name: name, Path: path, Before: before}
	if before == value {
		return c, nil
	}
	if err := checkValue(before); err != nil {
		return Change{}, fmt.Errorf("%s holds a value ndst could not put back: %v", path, err)
	}
	c.Wrote = value
	s.rec.Changes = append(s.rec.Changes, c)
	if err := s.save(); err != nil {
		s.rec.Changes = without(s.rec.Changes, path)
		return Change{}, fmt.Errorf("restore record: %w (%s not changed)", err, path)
	}
	if err := writeKnob(path, value); err != nil {
		s.rec.Changes = without(s.rec.Changes, path)
		if serr := s.save(); serr != nil {
			return Change{}, errors.Join(err, serr)
		}
		return Change{}, err
	}
	after, err := readKnob(path)
	if err != nil {
		after = ""
	}
	c.After = after
	s.rec.Changes[len(s.rec.Changes)-1] = c
	// The write is done: a failed save leaves the record with After empty,
	// which a restore still matches by Wrote.
	_ = s.save()
	shown := after
	if shown == "" {
		shown = value
	}
	s.o.notef("set %s", Describe(c, before, shown))
	return c, nil
}

// Undo puts back every knob the session changed, the last changed first,
// and forgets them. The session stays open for more changes.
func (s *Session) Undo() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.undo()
}

func (s *Session) undo() error {
	if len(s.rec.Changes) == 0 {
		return nil
	}
	var errs []error
	var kept []Change
	for _, c := range slices.Backward(s.rec.Changes) {
		if err := restore(c, s.o.Notef, true); err != nil {
			errs = append(errs, err)
			kept = append(kept, c)
		}
	}
	slices.Reverse(kept)
	s.rec.Changes = kept
	if err := s.save(); err != nil {
		errs = append(errs, fmt.Errorf("restore record: %w", err))
	}
	return errors.Join(errs...)
}

// Close puts every knob back (Undo) and releases the lock. It may be called
// more than once; a knob that could not be put back stays in the record,
// for the next ndst command to try again.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lock == nil {
		return nil
	}
	err := s.undo()
	s.release()
	return err
}

func (s *Session) release() {
	if s.lock != nil {
		s.lock.Close() // closing the descriptor drops the flock
		s.lock = nil
	}
}

// save writes the record, or removes it when nothing is changed.
func (s *Session) save() error {
	if len(s.rec.Changes) == 0 {
		if err := os.Remove(recordPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return safefile.Replace(recordPath(), 0o600, s.rec.encode(), nil)
}

// restore puts one knob back to c.Before. A live session (its own changes,
// seconds old) puts it back whatever it reads: the kernel adjusts some knobs
// as it uses them (rcu_cpu_stall_timeout is capped at 300 when the next
// grace period checks it), so a value ndst did not write is no sign that
// someone else took the knob over. A record of a killed ndst (live false),
// maybe hours old, puts back only a knob that still holds what ndst wrote,
// and leaves one changed since as it is, saying so.
func restore(c Change, notef func(string, ...any), live bool) error {
	if notef == nil {
		notef = func(string, ...any) {}
	}
	now, err := readKnob(c.Path)
	if err != nil {
		return fmt.Errorf("restore %s: %w", c.Path, err)
	}
	switch {
	case now == c.Before:
		return nil
	case !c.ours(now) && !live:
		notef("left %s at %s: it was changed to that after ndst set %s (ndst's value before was %s)", c.Path, now, c.Wrote, c.Before)
		return nil
	}
	back, err := put(c)
	if err != nil {
		return err
	}
	how := ""
	if !c.ours(now) {
		how = fmt.Sprintf(" (it read %s, not the %s ndst wrote)", now, c.Wrote)
	}
	notef("restored %s%s", Describe(c, now, back), how)
	return nil
}

// settle is how long a restored knob must keep its value: the kernel may
// have read the value ndst wrote just before the restore and write back
// its clamped form just after it (rcu_jiffies_till_stall_check() reads
// rcu_cpu_stall_timeout, and writes 300 over it when it was above); a grace
// period starts within a few jiffies.
var settle = 30 * time.Millisecond

// put writes c.Before and checks that it reads back, and still does after
// settle; a value the kernel wrote back over it is written again (three
// tries).
func put(c Change) (string, error) {
	for try := 0; ; try++ {
		if err := writeKnob(c.Path, c.Before); err != nil {
			return "", fmt.Errorf("restore %s to %s: %w", c.Path, c.Before, err)
		}
		back, err := readKnob(c.Path)
		if err != nil {
			return "", fmt.Errorf("restore %s: %w", c.Path, err)
		}
		if back != c.Before {
			return "", fmt.Errorf("restore %s: wrote %s, it reads %s", c.Path, c.Before, back)
		}
		time.Sleep(settle)
		if back, err = readKnob(c.Path); err != nil {
			return "", fmt.Errorf("restore %s: %w", c.Path, err)
		}
		if back == c.Before {
			return back, nil
		}
		if try == 2 {
			return "", fmt.Errorf("restore %s: wrote %s three times, and the kernel set it to %s each time after", c.Path, c.Before, back)
		}
	}
}

// loadRecord reads the restore record; nil when there is none.
func loadRecord() (*record, error) {
	p := recordPath()
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := checkOwned(p, false); err != nil {
		return nil, err
	}
	b, err := safefile.ReadFile(context.Background(), p, maxRecord, safefile.NoLinks)
	if err != nil {
		return nil, err
	}
	return decodeRecord(b)
}

// Pending reports whether a restore record is waiting (cheap: one lstat).
func Pending() bool {
	_, err := os.Lstat(recordPath())
	return err == nil
}

// ApplyPending restores the knobs a killed ndst left changed, telling notef
// what it does. It does nothing when there is no record, or when the record's
// owner still runs (it holds the lock and restores them itself). Without
// root it only says that a record waits.
func ApplyPending(notef func(format string, args ...any)) error {
	if !Pending() {
		return nil
	}
	if os.Geteuid() != 0 && sysRoot == "" {
		notef("%s records RCU knobs a killed ndst changed; run any ndst command as root to put them back", recordPath())
		return nil
	}
	lock, held, err := lockFile()
	if err != nil {
		return fmt.Errorf("restore record lock: %w", err)
	}
	if held {
		return nil
	}
	defer lock.Close()
	return applyLocked(notef)
}

// applyLocked applies and removes the restore record; the caller holds the
// lock.
func applyLocked(notef func(format string, args ...any)) error {
	if notef == nil {
		notef = func(string, ...any) {}
	}
	r, err := loadRecord()
	if err != nil {
		return fmt.Errorf("restore record %s: %w; it was left in place: check the knobs it names and remove it", recordPath(), err)
	}
	if r == nil {
		return nil
	}
	if id := bootID(); r.BootID != "" && id != "" && r.BootID != id {
		notef("%s is from an earlier boot (the knobs were reset by the reboot); removed", recordPath())
		return os.Remove(recordPath())
	}
	var names []string
	for _, c := range r.Changes {
		names = append(names, c.Path)
	}
	notef("ndst (pid %d, %s) ended with kernel knobs changed (%s); putting them back first", r.PID, r.Command, strings.Join(names, ", "))
	var errs []error
	var kept []Change
	for _, c := range slices.Backward(r.Changes) {
		if err := restore(c, notef, false); err != nil {
			errs = append(errs, err)
			kept = append([]Change{c}, kept...)
		}
	}
	if len(kept) == 0 {
		if err := os.Remove(recordPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	} else {
		r.Changes = kept
		if err := safefile.Replace(recordPath(), 0o600, r.encode(), nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
