package pseudofs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ndst-project/ndst/ndst/nlbackend/osthread"
	"golang.org/x/sys/unix"
)

// Where a private mount goes and how the kernel's file system list is read;
// tests point them elsewhere.
var filesystemsFile = "/proc/filesystems"

// maxFile bounds one file read (a tracepoint's format is about 1 KiB).
const maxFile = 1 << 20

var cache struct {
	sync.Mutex
	files map[string][]byte // by FS type and relative path
	src   map[string]string // by FS type: where it was read
	err   map[string]error  // by FS type: why it could not be
}

// Read reads the files rels (paths relative to fs's root) from the host's
// mount of fs, else from a private mount of it (see the package comment).
// It returns the files that exist and where they were read; the error is an
// *Unavailable when fs cannot be read at all.
func Read(fs *FS, rels ...string) (Files, string, error) {
	cache.Lock()
	defer cache.Unlock()
	if cache.files == nil {
		cache.files, cache.src, cache.err = map[string][]byte{}, map[string]string{}, map[string]error{}
	}
	if err := cache.err[fs.Type]; err != nil {
		return nil, "", err
	}
	key := func(r string) string { return fs.Type + "\x00" + r }
	var todo []string
	for _, r := range rels {
		if _, ok := cache.files[key(r)]; !ok {
			todo = append(todo, r)
		}
	}
	if len(todo) > 0 {
		got, src, err := readFresh(fs, todo)
		if err != nil {
			cache.err[fs.Type] = err
			return nil, "", err
		}
		cache.src[fs.Type] = src
		for _, r := range todo {
			cache.files[key(r)] = got[r] // nil: absent
		}
	}
	out := Files{}
	for _, r := range rels {
		if b := cache.files[key(r)]; b != nil {
			out[r] = b
		}
	}
	return out, cache.src[fs.Type], nil
}

// HostMount returns where the host has fs mounted ("" for nowhere).
func HostMount(fs *FS) string {
	for _, m := range fs.Mounts {
		if isFS(m, fs) {
			return m
		}
	}
	return ""
}

// isFS reports whether dir is the root of a mount of fs (or, for a file
// system that older kernels keep inside another, that directory of it).
func isFS(dir string, fs *FS) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	if int64(st.Type) == fs.Magic {
		return true
	}
	return fs.Under != nil && dir == filepath.Join(fs.Under.Mounts[0], fs.Sub) && int64(st.Type) == fs.Under.Magic
}

func readFresh(fs *FS, rels []string) (Files, string, error) {
	if m := HostMount(fs); m != "" {
		files, err := readAll(m, fs, rels)
		return files, m, err
	}
	// The thread changes its mount namespace: it must never run another
	// goroutine, and it ends afterwards.
	var files Files
	var src string
	err := osthread.Throwaway(func() (err error) {
		files, src, err = readPrivate(fs, rels)
		return err
	})
	return files, src, err
}

// readPrivate runs on a locked thread that ends afterwards.
func readPrivate(fs *FS, rels []string) (Files, string, error) {
	if !inKernel(fs.Type) {
		if fs.Under == nil || !inKernel(fs.Under.Type) {
			return nil, "", &Unavailable{fs.Type, fmt.Sprintf("this kernel has no %s (%s does not list it)", fs.Type, filesystemsFile)}
		}
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		why := fmt.Sprintf("it is not mounted, and a private mount of it needs root (CAP_SYS_ADMIN): unshare(CLONE_NEWNS): %v", err)
		if os.Geteuid() == 0 {
			why = fmt.Sprintf("it is not mounted, and a private mount namespace for it was refused: unshare(CLONE_NEWNS): %v", err)
		}
		return nil, "", &Unavailable{fs.Type, why}
	}
	// From here on the thread's namespace is its own: nothing mounted in it
	// may reach the host's, so make every mount private first.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, "", &Unavailable{fs.Type, fmt.Sprintf("it is not mounted, and its private mount namespace could not be made private: %v", err)}
	}
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	dir := fs.Mounts[0]
	err := unix.Mount(fs.Type, dir, fs.Type, flags, "")
	if err != nil && fs.Under != nil {
		// No mount point of its own (before 4.1): inside the other one.
		if err2 := unix.Mount(fs.Under.Type, fs.Under.Mounts[0], fs.Under.Type, flags, ""); err2 == nil {
			dir, err = filepath.Join(fs.Under.Mounts[0], fs.Sub), nil
			if !isFS(dir, fs) {
				_ = unix.Mount(fs.Type, dir, fs.Type, flags, "")
			}
		}
	}
	if err != nil {
		return nil, "", &Unavailable{fs.Type, fmt.Sprintf("it is not mounted, and mounting it privately on %s failed: %v", dir, err)}
	}
	files, err := readAll(dir, fs, rels)
	return files, fmt.Sprintf("a private mount of %s (the host has none mounted; its mounts are unchanged)", fs.Type), err
}

// inKernel reports whether the kernel lists fstype in /proc/filesystems.
func inKernel(fstype string) bool {
	b, err := readRegular(filesystemsFile, 0)
	if err != nil {
		return true // cannot tell: let the mount say
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[len(f)-1] == fstype {
			return true
		}
	}
	return false
}

func readAll(dir string, fs *FS, rels []string) (Files, error) {
	out := Files{}
	for _, r := range rels {
		if r == "" || filepath.IsAbs(r) || strings.HasPrefix(filepath.Clean(r), "..") {
			return nil, fmt.Errorf("%s: %q is not a path inside it", fs.Type, r)
		}
		b, err := readRegular(filepath.Join(dir, r), fs.Magic)
		switch {
		case errors.Is(err, unix.ENOENT):
		case err != nil:
			return nil, err
		default:
			out[r] = b
		}
	}
	return out, nil
}

// readRegular reads a regular file without following a final link and
// without blocking; with magic non-zero, only on that file system (or on
// debugfs, which holds tracefs's files on old kernels).
func readRegular(path string, magic int64) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if magic != 0 {
		var sf unix.Statfs_t
		if err := unix.Fstatfs(fd, &sf); err != nil {
			return nil, fmt.Errorf("statfs %s: %w", path, err)
		}
		if int64(sf.Type) != magic && int64(sf.Type) != Debugfs.Magic {
			return nil, fmt.Errorf("%s is not on the file system expected (type 0x%x)", path, sf.Type)
		}
	}
	var buf bytes.Buffer
	chunk := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, chunk)
		if n > 0 {
			buf.Write(chunk[:n])
			if buf.Len() > maxFile {
				return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFile)
			}
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			return buf.Bytes(), nil
		}
	}
}
