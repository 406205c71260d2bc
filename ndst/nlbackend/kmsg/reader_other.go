//go:build !linux

package kmsg

import "errors"

// Reader reads the kernel log; only Linux has /dev/kmsg.
type Reader struct {
	// Lost counts records the kernel overwrote before they were read.
	Lost int
}

// Open fails: /dev/kmsg is Linux's.
func Open(path string) (*Reader, error) {
	return nil, errors.New("the kernel log (/dev/kmsg) is read on Linux only")
}

// Read returns nothing.
func (r *Reader) Read(max int) ([]Record, error) { return nil, nil }

// Close does nothing.
func (r *Reader) Close() error { return nil }
