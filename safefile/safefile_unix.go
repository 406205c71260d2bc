//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openNonblock opens with O_NONBLOCK (a FIFO cannot block the open) and, with
// NoLinks, O_NOFOLLOW, then puts the descriptor back in blocking mode.
func openNonblock(path string, flag int, perm fs.FileMode, links Links) (*os.File, error) {
	flag |= unix.O_NONBLOCK | unix.O_CLOEXEC
	if links == NoLinks {
		flag |= unix.O_NOFOLLOW
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { err = unix.SetNonblock(int(fd), false) })
		if err == nil {
			err = cerr
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// syncDir makes a rename in dir durable. File systems that cannot sync a
// directory say EINVAL or ENOTSUP; that is not a failure.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}
