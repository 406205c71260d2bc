//go:build !linux

package explain

// ScanNsfsMounts returns nil: namespace files are Linux's.
func ScanNsfsMounts(procDir string) []NsfsMount { return nil }
