//go:build !linux

package wqtrace

import "errors"

// Watcher follows the runs of one work function; only Linux has them.
type Watcher struct{ Source string }

// Open fails: the tracepoints are Linux's.
func Open(fn string) (*Watcher, error) { return nil, errors.New("workqueue tracepoints need Linux") }

// Lost is 0.
func (w *Watcher) Lost() int { return 0 }

// Poll returns nothing.
func (w *Watcher) Poll() []Run { return nil }

// Close does nothing.
func (w *Watcher) Close() {}
