//go:build !linux

package wqtrace

import "errors"

// Watcher follows the runs of one work function; only Linux has them.
type Watcher struct{ Lost int }

// Open fails: the tracepoints are Linux's.
func Open(fn string) (*Watcher, error) { return nil, errors.New("workqueue tracepoints need Linux") }

// Poll returns nothing.
func (w *Watcher) Poll() []Run { return nil }

// Close does nothing.
func (w *Watcher) Close() {}
