package nlbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ndst-project/ndst/safefile"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Which namespaces under /run/netns are ndst's: those whose name has an
// ownership record in ownerDir that holds the identity of the namespace
// mounted at that name. Every namespace ndst mounts gets one, the one it
// works in (--netns) as well as those of netns add and of calibrate,
// predict and bench, and only a namespace with one is changed or deleted.
//
// The identity is one the kernel never reuses while it runs: the
// namespace's 64-bit id (ioctl NS_GET_ID on its nsfs file, Linux 6.18,
// fs/nsfs.c), else its cookie (getsockopt SO_NETNS_COOKIE on a socket
// opened inside it, Linux 5.14; on 6.18 both are ns_common.ns_id, drawn by
// ns_tree_gen_id() from one 64-bit counter). The nsfs inode is recorded
// too, as a cross-check only: the kernel frees inode numbers with their
// namespace and hands them out again, so after someone's `ip netns del` of
// an ndst namespace the next `ip netns add` of that name can get the same
// inode. A kernel with neither id (before 5.14) leaves only the inode:
// ownership is then by inode, and every command that judges it says so
// (identityNote).
//
// The record also names the process that created the namespace (PID and
// start time), so that reset leaves alone the namespaces of an ndst still
// running. Records live in /run, like the namespaces, and go with them at
// reboot.
//
// Order of creation: the namespace exists (held by a thread), then its
// record is written, then its file is created under /run/netns and the
// namespace mounted on it. Deletion: unmount, remove the file, and once
// every namespace of the command is deleted and waited for, remove the
// records. A process killed at any point leaves one of: nothing (the thread
// held the only reference); a record without a namespace; or an empty file
// with a record. Both are recognised as ndst's leftovers and removed by
// the next command that holds the registry lock (pruneLocked), and by
// reset. An empty file or a namespace without a record is never ndst's.
// A removed record's file is kept as a spare for the next one
// (recordspare_linux.go), outside ownerDir.

// ownerDir holds the ownership records; tests point it elsewhere.
var ownerDir = "/run/ndst/netns"

// ownerPath is the ownership record of a namespace name.
func ownerPath(name string) string { return filepath.Join(ownerDir, name) }

// Identity kinds, best first.
const (
	kindNsid   = "nsid"   // NS_GET_ID
	kindCookie = "cookie" // SO_NETNS_COOKIE
	kindInode  = "inode"  // neither: the nsfs inode alone
)

// nsGetID is NS_GET_ID (linux/nsfs.h): _IOR(0xb7, 13, __u64).
const nsGetID = 0x8008b70d

// nsIdentity is what a record holds of a namespace.
type nsIdentity struct {
	Kind string // kindNsid, kindCookie or kindInode
	ID   uint64 // the id or cookie; 0 for kindInode
	Ino  nsID   // the nsfs device and inode, a cross-check
}

func (i nsIdentity) String() string {
	if i.Kind == kindInode {
		return fmt.Sprintf("inode %d", i.Ino.ino)
	}
	return fmt.Sprintf("%s %d (inode %d)", i.Kind, i.ID, i.Ino.ino)
}

// identityKind is the best kind of identity this kernel offers, probed on
// this process's own namespace once.
var identityKind = sync.OnceValue(func() string {
	fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return kindInode
	}
	defer unix.Close(fd)
	if _, err := ioctlNsID(fd); err == nil {
		return kindNsid
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return kindInode
	}
	defer unix.Close(s)
	if _, err := unix.GetsockoptUint64(s, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE); err == nil {
		return kindCookie
	}
	return kindInode
})

// identityNote is what commands that judge ownership say on a kernel that
// offers only the inode ("" elsewhere).
func identityNote() string {
	if identityKind() != kindInode {
		return ""
	}
	return "this kernel has neither NS_GET_ID (6.18) nor SO_NETNS_COOKIE (5.14): ndst knows its namespaces by nsfs inode only, " +
		"which the kernel reuses, so a namespace someone else made under a name ndst used after deleting ndst's can be taken for ndst's"
}

func ioctlNsID(fd int) (uint64, error) {
	var id uint64
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), nsGetID, uintptr(unsafe.Pointer(&id)))
	if e != 0 {
		return 0, e
	}
	return id, nil
}

// identityOf reads the identity of the namespace open as fd, of the kind
// this kernel offers.
func identityOf(fd int) (nsIdentity, error) {
	ino, err := fdID(fd)
	if err != nil {
		return nsIdentity{}, err
	}
	id := nsIdentity{Kind: identityKind(), Ino: ino}
	switch id.Kind {
	case kindNsid:
		id.ID, err = ioctlNsID(fd)
	case kindCookie:
		var s int
		if s, err = socketAt(netns.NsHandle(fd), unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err == nil {
			id.ID, err = unix.GetsockoptUint64(s, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
			unix.Close(s)
		}
	}
	if err != nil {
		return nsIdentity{}, fmt.Errorf("read the namespace's %s: %w", id.Kind, err)
	}
	return id, nil
}

// record is one ownership record.
type record struct {
	id nsIdentity
	// dir is the device of the netnsDir the namespace was mounted in: a
	// process in a mount namespace of its own may have a /run/netns of its
	// own (a tmpfs) beside the machine's /run/ndst, and its records must
	// not be judged against another /run/netns, nor pruned from it.
	dir uint64
	// creator is the PID and start time (clock ticks after boot,
	// /proc/PID/stat field 22) of the process that created the namespace.
	pid   int
	start uint64
}

// recordFormat is the first line of a record.
const recordFormat = "ndst netns owner 2"

func (r record) encode() []byte {
	return fmt.Appendf(nil, "%s\nid %s %d\ninode %d %d\ndir %d\ncreator %d %d\n",
		recordFormat, r.id.Kind, r.id.ID, r.id.Ino.dev, r.id.Ino.ino, r.dir, r.pid, r.start)
}

// netnsDirDev is the device of netnsDir (0 when it cannot be read).
func netnsDirDev() uint64 {
	var st unix.Stat_t
	if unix.Stat(netnsDir, &st) != nil {
		return 0
	}
	return st.Dev
}

// errOtherDir marks a record written for another /run/netns (see
// record.dir).
var errOtherDir = errors.New("it was recorded for another /run/netns (that of another mount namespace)")

// errLegacyRecord marks a record of an ndst from before identities: the
// inode alone, which the kernel reuses.
var errLegacyRecord = errors.New("an ownership record by nsfs inode only, from an older ndst (the kernel reuses inodes)")

// parseRecord reads a record; anything but the format above is an error.
func parseRecord(b []byte) (record, error) {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) == 1 && len(strings.Fields(lines[0])) == 2 {
		return record{}, errLegacyRecord
	}
	if len(lines) != 5 || lines[0] != recordFormat {
		return record{}, errors.New("not an ndst ownership record of this version")
	}
	var r record
	var kind string
	if n, err := fmt.Sscanf(lines[1], "id %s %d", &kind, &r.id.ID); n != 2 || err != nil {
		return record{}, fmt.Errorf("bad id line %q", lines[1])
	}
	if kind != kindNsid && kind != kindCookie && kind != kindInode {
		return record{}, fmt.Errorf("unknown identity kind %q", kind)
	}
	r.id.Kind = kind
	if n, err := fmt.Sscanf(lines[2], "inode %d %d", &r.id.Ino.dev, &r.id.Ino.ino); n != 2 || err != nil {
		return record{}, fmt.Errorf("bad inode line %q", lines[2])
	}
	if n, err := fmt.Sscanf(lines[3], "dir %d", &r.dir); n != 1 || err != nil {
		return record{}, fmt.Errorf("bad dir line %q", lines[3])
	}
	if n, err := fmt.Sscanf(lines[4], "creator %d %d", &r.pid, &r.start); n != 2 || err != nil {
		return record{}, fmt.Errorf("bad creator line %q", lines[4])
	}
	if !bytes.Equal(r.encode(), b) {
		return record{}, errors.New("not in the form ndst writes")
	}
	return r, nil
}

// maxRecord bounds a record read.
const maxRecord = 512

// readRecord returns the record of name; fs.ErrNotExist when it has none.
func readRecord(name string) (record, error) {
	b, err := safefile.ReadFile(context.Background(), ownerPath(name), maxRecord, safefile.NoLinks)
	if err != nil {
		return record{}, err
	}
	return parseRecord(b)
}

// writeRecord records that the namespace with identity id, about to be
// mounted at name by this process, is ndst's: into a spare record file
// when there is one (recordspare_linux.go), else a new file, renamed into
// place either way.
func writeRecord(name string, id nsIdentity) error {
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", ownerDir, err)
	}
	r := record{id: id, dir: netnsDirDev(), pid: os.Getpid(), start: selfStart()}
	if writeFromSpare(ownerPath(name), r.encode()) {
		return nil
	}
	if err := safefile.Replace(ownerPath(name), 0o644, r.encode(), &safefile.ReplaceOptions{TempPattern: ".tmp-*", Volatile: true}); err != nil {
		return fmt.Errorf("write the ownership record of %s: %w", name, err)
	}
	return nil
}

// removeRecord forgets name's record, keeping its file as a spare
// (recordspare_linux.go) when it can; a record that is already gone is not
// an error, one that cannot be removed is.
func removeRecord(name string) error {
	if giveBack(ownerPath(name)) {
		return nil
	}
	if err := os.Remove(ownerPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the ownership record %s: %w", ownerPath(name), err)
	}
	return nil
}

// selfStart is this process's start time (see record.start).
var selfStart = sync.OnceValue(func() uint64 {
	s, _ := processStart(os.Getpid())
	return s
})

// processStart reads field 22 (starttime) of /proc/PID/stat.
func processStart(pid int) (uint64, bool) {
	b, err := safefile.ReadKernelFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return v, err == nil
}

// creatorAlive reports whether the process that wrote r still runs (the
// same PID with the same start time).
func (r record) creatorAlive() bool {
	if r.pid <= 0 {
		return false
	}
	s, ok := processStart(r.pid)
	return ok && s == r.start
}

// namespace is one entry of /run/netns.
type namespace struct {
	Name string
	ID   nsID // zero when it is not a mounted network namespace
	// Ours is set when its record names it: the namespace is ndst's.
	Ours bool
	// Why says why a namespace is not ndst's, for messages.
	Why string
	rec record
	// Leftover is set for an empty file with a record: an ndst killed
	// between its record and its mount, or during its delete.
	Leftover bool
}

// scanNetns lists /run/netns: every entry, with its identity and whether
// it is ndst's.
func scanNetns() ([]namespace, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]namespace, 0, len(ents))
	for _, e := range ents {
		out = append(out, judgeEntry(e.Name()))
	}
	return out, nil
}

// judgeEntry says whether the entry name of /run/netns is ndst's.
func judgeEntry(name string) namespace {
	n := namespace{Name: name}
	rec, rerr := readRecord(name)
	if rerr == nil && rec.dir != netnsDirDev() {
		rerr = errOtherDir
	}
	p := nsPath(name)
	// Only a regular file is opened (a mounted namespace is one, and so is
	// the empty file under it): a device node, FIFO or link planted there
	// is judged from its lstat alone.
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		n.Why = "not a mounted network namespace"
		return n
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0)
	if err != nil {
		n.Why = fmt.Sprintf("cannot open %s: %v", p, err)
		return n
	}
	defer unix.Close(fd)
	if !isNetnsFD(fd) {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Size == 0 && rerr == nil {
			n.Leftover, n.rec = true, rec
			n.Why = "an empty file left by an interrupted ndst"
		} else {
			n.Why = "not a mounted network namespace"
		}
		return n
	}
	n.ID, _ = fdID(fd)
	switch {
	case errors.Is(rerr, fs.ErrNotExist):
		n.Why = "no ownership record under " + ownerDir
		return n
	case rerr != nil:
		n.Why = fmt.Sprintf("its ownership record %s is unusable: %v", ownerPath(name), rerr)
		return n
	}
	id, err := identityOf(fd)
	switch {
	case err != nil:
		n.Why = err.Error()
	case rec.id != id:
		n.Why = fmt.Sprintf("its record names another namespace (%s; this one is %s): the one ndst made was deleted and this one made under its name", rec.id, id)
	default:
		n.Ours, n.rec = true, rec
	}
	return n
}

// mountedNetns returns the identity of the network namespace mounted at
// path: stat without opening (a FIFO planted there cannot block), and the
// nsfs magic checked on the path's file system.
func mountedNetns(path string) (nsID, bool) {
	var sfs unix.Statfs_t
	if unix.Statfs(path, &sfs) != nil || sfs.Type != unix.NSFS_MAGIC {
		return nsID{}, false
	}
	id, err := statID(path)
	return id, err == nil
}

// The registry lock: an exclusive flock(2) on ownerDir, held by every
// command that creates, records, deletes or prunes namespaces under
// /run/netns, from its scan to its last change, so that two ndst processes
// never both pick a name, both delete one namespace, or prune what the
// other is creating. A second netns del of one range waits for the first
// and then scans afresh.

// lockRegistry takes the registry lock, waiting up to wait and no longer
// than ctx.
func lockRegistry(ctx context.Context, wait time.Duration) (func(), error) {
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", ownerDir, err)
	}
	fd, err := unix.Open(ownerDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", ownerDir, err)
	}
	unlock, err := flockWait(ctx, fd, "ndst's namespace records "+ownerDir, wait, func() int {
		id, err := fdID(fd)
		if err != nil {
			return 0
		}
		return lockHolder(id)
	})
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { unlock(); unix.Close(fd) }, nil
}

// pruned says what pruneLocked removed and what it could not.
type pruned struct {
	Records   int      // records of namespaces that are gone
	Temps     int      // temporary files of records being written when their ndst was killed
	Leftovers []string // empty files of interrupted ndst runs, removed
	Failed    []string // what could not be removed, with why
}

// notes are the lines a command reports about a prune.
func (p pruned) notes() []string {
	var out []string
	if p.Records > 0 {
		out = append(out, fmt.Sprintf("dropped %s of namespaces that are gone", plural(p.Records, "ownership record")))
	}
	if p.Temps > 0 {
		out = append(out, fmt.Sprintf("removed %s of records an interrupted ndst was writing", plural(p.Temps, "temporary file")))
	}
	if len(p.Leftovers) > 0 {
		out = append(out, fmt.Sprintf("removed %s left under %s by an interrupted ndst: %s", plural(len(p.Leftovers), "empty file"), netnsDir, joinNames(p.Leftovers)))
	}
	for _, f := range p.Failed {
		out = append(out, "could not clean up: "+f)
	}
	return out
}

// leftoverSettle is how long an empty file with a record is watched before
// it is removed as a leftover: `ip netns add` of a name whose ndst
// namespace someone deleted creates its file and mounts on it within
// microseconds, and must not lose it.
const leftoverSettle = 50 * time.Millisecond

// pruneLocked, under the registry lock, drops the records whose namespace
// is gone or was replaced, and removes the empty files of interrupted runs
// (see the top of the file). It returns the scan after the prune.
func pruneLocked(existing []namespace) ([]namespace, pruned) {
	var p pruned
	names := map[string]bool{}
	var kept []namespace
	var settle []namespace
	for _, n := range existing {
		names[n.Name] = true
		if n.Leftover {
			settle = append(settle, n)
			continue
		}
		kept = append(kept, n)
	}
	if len(settle) > 0 {
		time.Sleep(leftoverSettle)
		for _, n := range settle {
			again := judgeEntry(n.Name)
			if !again.Leftover {
				kept = append(kept, again)
				continue
			}
			if err := os.Remove(nsPath(n.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				p.Failed = append(p.Failed, fmt.Sprintf("remove %s: %v", nsPath(n.Name), err))
				kept = append(kept, again)
				continue
			}
			p.Leftovers = append(p.Leftovers, n.Name)
			delete(names, n.Name)
			if err := removeRecord(n.Name); err != nil {
				p.Failed = append(p.Failed, err.Error())
			}
		}
	}
	ents, err := os.ReadDir(ownerDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.Failed = append(p.Failed, fmt.Sprintf("list %s: %v", ownerDir, err))
	}
	dirDev := netnsDirDev()
	byName := map[string]namespace{}
	for _, n := range kept {
		byName[n.Name] = n
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			// A record's temporary file: records are written under
			// the registry lock, which this holds, so it is the
			// leftover of an ndst killed while writing one.
			if err := os.Remove(filepath.Join(ownerDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				p.Failed = append(p.Failed, err.Error())
			} else {
				p.Temps++
			}
			continue
		}
		if strings.HasPrefix(name, ".") {
			continue
		}
		if rec, err := readRecord(name); err == nil && rec.dir != dirDev {
			continue // another /run/netns's (see record.dir)
		}
		n, ok := byName[name]
		// A record is dropped when no file has its name, or when the
		// namespace there is another one; a record that cannot be
		// judged (unreadable, a namespace whose identity cannot be
		// read) is kept.
		stale := !ok && !names[name]
		if ok && !n.Ours && n.ID != (nsID{}) && strings.Contains(n.Why, "its record names another namespace") {
			stale = true
		}
		if !stale {
			continue
		}
		if err := removeRecord(name); err != nil {
			p.Failed = append(p.Failed, err.Error())
			continue
		}
		p.Records++
	}
	return kept, p
}
