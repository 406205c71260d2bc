//go:build !linux

package membarrier

import "errors"

// Global fails: membarrier is a Linux system call.
func Global() (func() error, error) {
	return nil, errors.New("membarrier needs Linux")
}
