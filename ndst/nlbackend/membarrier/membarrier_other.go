//go:build !linux

package membarrier

import (
	"context"
	"errors"
	"time"
)

var errNotLinux = errors.New("membarrier needs Linux")

// Global fails: membarrier is a Linux system call.
func Global() (func() error, error) { return nil, errNotLinux }

// Probe fails: membarrier is a Linux system call.
func Probe(context.Context, int, func() time.Duration) (starts, ends []int64, err error) {
	return nil, nil, errNotLinux
}
