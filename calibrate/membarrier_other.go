//go:build !linux

package calibrate

import (
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/membarrier"
)

func membarrierGlobal() (func() error, error) { return membarrier.Global() }

var monoStart = time.Now()

func monotonic() int64 { return int64(time.Since(monoStart)) }
