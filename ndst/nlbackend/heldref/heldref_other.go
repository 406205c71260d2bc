//go:build !linux

package heldref

import (
	"errors"
	"time"

	"github.com/vishvananda/netns"
)

// Hold is one held reference; only Linux has them.
type Hold struct{ Ifindex int }

// Start fails: the mechanism is Linux's.
func Start(ns netns.NsHandle, ifindex int, d time.Duration) (*Hold, error) {
	return nil, errors.New("heldref: needs Linux")
}

// Done is closed at once.
func (h *Hold) Done() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// Release does nothing.
func (h *Hold) Release() {}
