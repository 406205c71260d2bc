//go:build !linux

package knobset

import "errors"

// errLinux is every change's answer off Linux: the knobs are Linux's.
var errLinux = errors.New("changing kernel knobs needs Linux")

// Session changes knobs and puts them back (Linux only).
type Session struct{}

// Begin fails: there are no knobs to change off Linux.
func Begin(Options) (*Session, error) { return nil, errLinux }

// Check says that the knob cannot be changed off Linux.
func Check(path string) error { return &NotWritableError{path, errLinux.Error()} }

// Set fails off Linux.
func (s *Session) Set(name, path, value string) (Change, error) { return Change{}, errLinux }

// Undo has nothing to put back off Linux.
func (s *Session) Undo() error { return nil }

// Close has nothing to put back off Linux.
func (s *Session) Close() error { return nil }

// Pending is false off Linux: no record is ever written.
func Pending() bool { return false }

// ApplyPending has nothing to restore off Linux.
func ApplyPending(func(format string, args ...any)) error { return nil }
