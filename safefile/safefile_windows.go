//go:build windows

package safefile

import (
	"io/fs"
	"os"
)

// openNonblock opens path. Windows has no FIFOs in the file system (named
// pipes live under \\.\pipe\) and no O_NOFOLLOW: the lstat before the open
// and the fstat after it are the checks.
func openNonblock(path string, flag int, perm fs.FileMode, _ Links) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// syncDir does nothing: Windows cannot flush a directory handle, and
// MoveFileEx makes the rename durable with the file.
func syncDir(string) error { return nil }
