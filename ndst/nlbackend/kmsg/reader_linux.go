package kmsg

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// Reader reads the kernel log from where it was opened on.
type Reader struct {
	fd   int
	path string
	buf  []byte
	next uint64 // the sequence number expected next; 0 before the first
	// Lost counts records the kernel overwrote before they were read.
	Lost int
}

// Open opens path (Path outside tests) at the end of the kernel log. It
// refuses anything but the kernel log device (see the package doc); an
// unreadable log (dmesg_restrict without CAP_SYSLOG, no /dev in a
// container) is an error saying so.
func Open(path string) (*Reader, error) {
	if err := checkDevice(path, unix.Lstat); err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := checkDevice(path, func(_ string, st *unix.Stat_t) error { return unix.Fstat(fd, st) }); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// SEEK_END: the next read returns the first record logged after now.
	if _, err := unix.Seek(fd, 0, unix.SEEK_END); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("seek to the end of %s: %w", path, err)
	}
	return &Reader{fd: fd, path: path, buf: make([]byte, MaxRecord)}, nil
}

// checkDevice fails unless stat says path is the kernel log device.
func checkDevice(path string, stat func(string, *unix.Stat_t) error) error {
	var st unix.Stat_t
	if err := stat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s does not exist: %w", path, fs.ErrNotExist)
		}
		return fmt.Errorf("stat %s: %w", path, err)
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	}
	if mode&fs.ModeCharDevice == 0 {
		return fmt.Errorf("%s is %s, not the kernel log device", path, safefile.Describe(mode))
	}
	if maj, min := unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)); maj != devMajor || min != devMinor {
		return fmt.Errorf("%s is character device %d:%d, not the kernel log (%d:%d)", path, maj, min, devMajor, devMinor)
	}
	return nil
}

// Read returns the records logged since the last call, at most max of
// them, without waiting. Records the kernel overwrote meanwhile are
// counted in r.Lost; malformed ones are skipped.
func (r *Reader) Read(max int) ([]Record, error) {
	var out []Record
	for len(out) < max {
		n, err := unix.Read(r.fd, r.buf)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return out, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EPIPE):
			// Overwritten before it was read; the next read resumes at the
			// oldest record left, and the gap in sequence numbers says how
			// many went.
			continue
		case err != nil:
			return out, fmt.Errorf("read %s: %w", r.path, err)
		case n == 0:
			return out, nil
		}
		rec, perr := ParseRecord(r.buf[:n])
		if perr != nil {
			continue
		}
		if r.next != 0 && rec.Seq > r.next {
			r.Lost += int(rec.Seq - r.next)
		}
		r.next = rec.Seq + 1
		out = append(out, rec)
	}
	return out, nil
}

// Close closes the reader.
func (r *Reader) Close() error {
	if r == nil || r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}
