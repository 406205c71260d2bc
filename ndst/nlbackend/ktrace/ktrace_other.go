//go:build !linux

package ktrace

import (
	"errors"
	"io"
)

// Recorder records the real kernel's tracepoints; only Linux has them.
type Recorder struct{ Source string }

// Start fails off Linux.
func Start() (*Recorder, error) { return nil, errors.New("the kernel's tracepoints need Linux") }

// Stop does nothing.
func (r *Recorder) Stop() {}

// Lost is 0.
func (r *Recorder) Lost() int { return 0 }

// Write fails off Linux.
func (r *Recorder) Write(w io.Writer) error { return errors.New("the kernel's tracepoints need Linux") }
