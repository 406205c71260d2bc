//go:build !linux

package calltrace

import "errors"

// Watcher follows one thread's returns from one system call; Linux only.
type Watcher struct{}

// Open fails off Linux.
func Open(tid, nr int) (*Watcher, error) {
	return nil, errors.New("system call tracepoints need Linux")
}

// Returns returns nothing.
func (w *Watcher) Returns() (times, rets []int64) { return nil, nil }

// Lost is 0.
func (w *Watcher) Lost() int { return 0 }

// Close does nothing.
func (w *Watcher) Close() {}
