package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/osthread"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named namespaces live, as with `ip netns`.
var netnsDir = "/run/netns"

// Linux capability numbers (linux/capability.h).
const (
	capNetAdmin = 12
	capSysAdmin = 21
)

// checkPrivileges fails with one line naming the missing capabilities and
// the UID when the process cannot manage links and namespaces.
func checkPrivileges() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("netlink backend: cannot read this process's capabilities: %v", err)
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	return privilegeError(eff, os.Geteuid())
}

// privilegeError is checkPrivileges on given effective capabilities.
func privilegeError(eff uint64, uid int) error {
	var missing []string
	if eff&(1<<capNetAdmin) == 0 {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if eff&(1<<capSysAdmin) == 0 {
		missing = append(missing, "CAP_SYS_ADMIN")
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("netlink backend needs %s (to manage links and network namespaces); uid %d lacks it: run as root",
		strings.Join(missing, " and "), uid)
}

// nsID identifies a namespace by its nsfs inode.
type nsID struct{ dev, ino uint64 }

func statID(path string) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nsID{}, err
	}
	return nsID{st.Dev, st.Ino}, nil
}

func fdID(fd int) (nsID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nsID{}, err
	}
	return nsID{st.Dev, st.Ino}, nil
}

// procNetInitIno is PROC_NET_INIT_INO (include/linux/proc_ns.h): the nsfs
// inode number of the initial network namespace, fixed since Linux 3.8.
// Namespaces created later get inode numbers from 0xF0000000 up.
const procNetInitIno = 0xEFFFFFF9

// pid1NetnsPath is PID 1's network namespace; tests point it elsewhere.
var pid1NetnsPath = "/proc/1/ns/net"

// rootNamespace reports whether the namespace id is the host's root: the
// initial network namespace (nsfs inode PROC_NET_INIT_INO on the nsfs
// device), or the namespace of PID 1 when that can be read (in a container
// whose PID 1 has a namespace of its own, that one is the host to protect).
// It compares identities only: the namespace this process runs in plays
// no part, so ndst started inside any namespace judges the same way.
func rootNamespace(id nsID) (bool, string) {
	if id.ino == procNetInitIno {
		// Every namespace inode is on the one nsfs device; when it cannot
		// be read, the inode number alone decides (refusing is the safe
		// side).
		if dev, ok := nsfsDev(); !ok || dev == id.dev {
			return true, "the initial network namespace"
		}
	}
	if p1, err := statID(pid1NetnsPath); err == nil && p1 == id {
		return true, "the network namespace of PID 1"
	}
	return false, ""
}

// nsfsDev is the device number of nsfs, read from this process's own
// namespace file (any namespace file would do: only the device is used).
func nsfsDev() (uint64, bool) {
	id, err := statID("/proc/self/ns/net")
	return id.dev, err == nil
}

// nsGetNstype is the NS_GET_NSTYPE ioctl (linux/nsfs.h): _IO(0xb7, 0x3).
const nsGetNstype = 0xb703

// isNetnsFD reports whether fd refers to a network namespace (nsfs, of type
// CLONE_NEWNET), not a plain file or another kind of namespace.
func isNetnsFD(fd int) bool {
	var sfs unix.Statfs_t
	if unix.Fstatfs(fd, &sfs) != nil || sfs.Type != unix.NSFS_MAGIC {
		return false
	}
	t, err := unix.IoctlRetInt(fd, nsGetNstype)
	return err != nil || t == unix.CLONE_NEWNET // kernels before 4.11 lack the ioctl
}

// nsPath is the bind-mount path of a named namespace.
func nsPath(name string) string { return filepath.Join(netnsDir, name) }

// openNetns opens the named namespace, creating it when create is set and it
// does not exist. created reports whether this call made it.
// errNoNetns is wrapped when a namespace that must exist does not.
var errNoNetns = errors.New("does not exist")

func openNetns(name string, create bool) (h netns.NsHandle, created bool, err error) {
	p := nsPath(name)
	deadline := time.Now().Add(time.Second)
	for {
		// Non-blocking: a FIFO planted at the path must not hang the open.
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		switch {
		case err == nil:
			if isNetnsFD(fd) {
				return netns.NsHandle(fd), created, nil
			}
			unix.Close(fd)
			// Another process may be between creating the file and
			// mounting the namespace on it: wait a little.
			if time.Now().After(deadline) {
				return netns.None(), false, fmt.Errorf("%s exists but is not a network namespace (left over from an interrupted run?); remove it with `ip netns del %s` or ndst reset", p, name)
			}
			time.Sleep(10 * time.Millisecond)
		case errors.Is(err, unix.ENOENT) && create:
			made, err := createNetns(name)
			if err != nil {
				return netns.None(), false, err
			}
			created = created || made
		case errors.Is(err, unix.ENOENT):
			return netns.None(), false, fmt.Errorf("network namespace %q: %w", name, errNoNetns)
		default:
			return netns.None(), false, fmt.Errorf("open network namespace %s: %w", p, err)
		}
	}
}

// createNetns does what `ip netns add` does, and records the namespace as
// ndst's (netnsown_linux.go): make /run/netns a shared mount point, and on
// a throwaway thread unshare a new network namespace, write its record,
// create its file and bind-mount it there, all under the registry lock. It
// reports false when another process created the file first.
func createNetns(name string) (bool, error) {
	unregister, err := lockRegistry(context.Background(), 10*time.Second)
	if err != nil {
		return false, err
	}
	defer unregister()
	if err := ensureNetnsDir(); err != nil {
		return false, err
	}
	if _, err := os.Lstat(nsPath(name)); err == nil {
		return false, nil
	}
	// unshare(CLONE_NEWNET) moves the calling thread only. It runs on a
	// locked thread that is never unlocked, so Go discards the thread when
	// the goroutine ends and nothing else ever runs in the new namespace.
	errc := make(chan error, 1)
	go onThrowawayThread(errc, func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("create network namespace: %w", err)
		}
		self, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(self)
		id, err := identityOf(self)
		if err != nil {
			return err
		}
		return recordAndMount(name, id)
	})
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		// The thread finishes by itself; a record or file it leaves is a
		// leftover that the next command removes.
		return false, fmt.Errorf("creating network namespace %q took more than 10 s", name)
	}
	if errors.Is(err, errNameTaken) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// socketAt opens a socket in the network namespace ns without moving the
// process: on a throwaway thread that enters ns (a socket belongs to the
// namespace of the thread that makes it).
func socketAt(ns netns.NsHandle, domain, typ, proto int) (int, error) {
	var fd int
	errc := make(chan error, 1)
	go onThrowawayThread(errc, func() error {
		if err := unix.Setns(int(ns), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter the network namespace: %w", err)
		}
		var err error
		fd, err = unix.Socket(domain, typ, proto)
		return err
	})
	select {
	case err := <-errc:
		return fd, err
	case <-time.After(10 * time.Second):
		return -1, errors.New("opening a socket in the network namespace took more than 10 s")
	}
}

// onThrowawayThread runs fn on an OS thread that ends afterwards (package
// osthread) and sends fn's result on errc.
func onThrowawayThread(errc chan<- error, fn func() error) { errc <- osthread.Throwaway(fn) }

// removeNetns deletes the named namespace as `ip netns del` does
// (unmount, remove the file) and then its ownership record; a missing file
// or record is not an error. Callers have established that the name is
// ndst's.
func removeNetns(name string) error {
	p := nsPath(name)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return removeRecord(name)
}
