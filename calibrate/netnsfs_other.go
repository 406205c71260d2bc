//go:build !linux

package calibrate

// netnsFilesNote: the namespaces' files are a Linux host's.
func netnsFilesNote() string { return "" }
