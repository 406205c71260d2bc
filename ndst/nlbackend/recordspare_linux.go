package nlbackend

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Spare record files: an ownership record that a delete no longer needs is
// renamed into spareDir instead of being unlinked, and the next record is
// written into a spare and renamed into place, so that records cost the
// file system no inode once the first namespaces are made.
//
// Why: on ext4 without a journal (a /run that is not a tmpfs), every inode
// allocation first skips the free inodes deleted in the last minute, or in
// the last six while their inode table block is dirty, and takes one only
// when the group has no other free inode (find_inode_bit() and
// recently_deleted(), 6.18 fs/ext4/ialloc.c l.672-752): each skip is a
// buffer lookup, so a create's cost grows with how many files were deleted
// shortly before it. With a record written and unlinked per namespace,
// ndst's creates of 200 namespaces on such a machine drifted from 230 to
// 355 ms over twelve rounds of add and delete in one process, and on to
// 462 and 592 ms in the next two, where with the records on a tmpfs they
// stayed at 150-200 ms. A rename allocates and frees no inode. The mount point under /run/netns is still made and removed per
// namespace, as `ip netns add` and `ip netns del` do.
//
// Every spare is used under the registry lock, and a spare is claimed by
// renaming it to a name of this process's own before it is written, so two
// writers can never write one file. A spare's content is meaningless: the
// directory is never read as records, only listed, and a killed process's
// claimed file is one more spare. At most maxSpares are kept; reset removes
// them all.

// maxSpares bounds the spares kept (a page of a tmpfs or a block of ext4
// each); tests lower it.
var maxSpares = 1024

// spareDir is the directory of spare record files, beside ownerDir (a
// rename needs one file system).
func spareDir() string { return ownerDir + "-spare" }

// spares is this process's view of spareDir: names it believes are spares,
// listed at first use and kept up to date by its own takes and gives. Other
// processes change the directory between this one's commands; a name that
// is gone fails its claim and is dropped.
var spares struct {
	mu     sync.Mutex
	dir    string // the spareDir the names are of (tests move ownerDir)
	names  []string
	listed bool
	seq    uint64
}

// spareList, with spares.mu held, makes sure the names are listed for the
// current spareDir.
func spareList() {
	if spares.listed && spares.dir == spareDir() {
		return
	}
	spares.dir, spares.names, spares.listed = spareDir(), nil, true
	ents, err := os.ReadDir(spares.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			spares.names = append(spares.names, e.Name())
		}
	}
}

// spareName is a new name in spareDir that only this process uses.
func spareName() string {
	spares.seq++
	return filepath.Join(spares.dir, strconv.Itoa(os.Getpid())+"-"+strconv.FormatUint(spares.seq, 10))
}

// writeFromSpare writes data to path through a spare: claim one, write
// it, rename it onto path. It reports false, having changed nothing at
// path, when there is no spare or any step fails; the caller then writes
// the file the ordinary way.
func writeFromSpare(path string, data []byte) bool {
	spares.mu.Lock()
	spareList()
	var claimed string
	for len(spares.names) > 0 && claimed == "" {
		n := spares.names[len(spares.names)-1]
		spares.names = spares.names[:len(spares.names)-1]
		c := spareName()
		if os.Rename(filepath.Join(spares.dir, n), c) == nil {
			claimed = c
		}
	}
	spares.mu.Unlock()
	if claimed == "" {
		return false
	}
	if err := fillSpare(claimed, data); err != nil {
		os.Remove(claimed)
		return false
	}
	if err := os.Rename(claimed, path); err != nil {
		os.Remove(claimed)
		return false
	}
	return true
}

// fillSpare replaces a claimed spare's content with data. The file is
// opened without following a link, without blocking and without
// truncating, and is truncated only once it is known to be a regular file
// of this user with no other name (a hard link placed among the spares
// would otherwise give another file's content away).
func fillSpare(path string, data []byte) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := ownSingleFile(f); err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	n, err := f.Write(data)
	if err == nil && n != len(data) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(data))
	}
	return err
}

// ownSingleFile checks that f is a regular file of this user with one name.
func ownSingleFile(f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("%s is not a regular file", f.Name())
	case st.Nlink != 1:
		return fmt.Errorf("%s has %d names", f.Name(), st.Nlink)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is not this user's (uid %d)", f.Name(), st.Uid)
	}
	return nil
}

// giveBack moves the record at path to the spares. It reports false when
// the spares are full, the record is not a regular file with one name, or
// the rename fails; the caller then removes it. A record that is gone is given back
// (there is nothing to remove).
func giveBack(path string) bool {
	var st unix.Stat_t
	err := unix.Lstat(path, &st)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return false // removed by the caller: a spare has one name
	}
	spares.mu.Lock()
	defer spares.mu.Unlock()
	spareList()
	if len(spares.names) >= maxSpares {
		return false
	}
	if err := os.MkdirAll(spares.dir, 0o755); err != nil {
		return false
	}
	dst := spareName()
	if err := os.Rename(path, dst); err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	spares.names = append(spares.names, filepath.Base(dst))
	return true
}

// dropSpares removes spareDir and every file in it (reset), and says how
// many it removed.
func dropSpares() (int, error) {
	spares.mu.Lock()
	defer spares.mu.Unlock()
	dir := spareDir()
	spares.dir, spares.names, spares.listed = dir, nil, true
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
		n++
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	return n, nil
}
