//go:build !linux

package calibrate

import (
	"errors"
	"time"
)

func membarrierGlobal() (func() error, error) {
	return nil, errors.New("membarrier needs Linux")
}

var monoStart = time.Now()

func monotonic() int64 { return int64(time.Since(monoStart)) }
