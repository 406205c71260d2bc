//go:build !linux

package sysmem

// available knows no limit outside Linux.
func available() (uint64, bool) { return 0, false }
