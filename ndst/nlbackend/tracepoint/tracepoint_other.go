//go:build !linux

package tracepoint

import "errors"

var errLinux = errors.New("tracepoints are Linux's")

// Lookup fails: tracepoints are Linux's.
func Lookup(names ...string) ([]Event, string, error) { return nil, "", errLinux }

// Set is a set of open tracepoint events; only Linux has them.
type Set struct{ Lost int }

// Spec is one event to open.
type Spec struct {
	Event  Event
	Filter string
}

// OpenCPUs fails off Linux.
func OpenCPUs(specs []Spec, pages int) (*Set, error) { return nil, errLinux }

// OpenThread fails off Linux.
func OpenThread(specs []Spec, tid, pages int) (*Set, error) { return nil, errLinux }

// Read returns nothing.
func (s *Set) Read() []Sample { return nil }

// Close does nothing.
func (s *Set) Close() {}
