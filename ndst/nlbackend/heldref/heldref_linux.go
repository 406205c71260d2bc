package heldref

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// userfaultfd ioctls and structures (linux/userfaultfd.h).
const (
	uffdAPI               = 0xAA
	uffdioAPI             = 0xc018aa3f // _IOWR(0xAA, 0x3F, struct uffdio_api)
	uffdioRegister        = 0xc020aa00 // _IOWR(0xAA, 0x00, struct uffdio_register)
	uffdioRegisterMissing = 1
)

type uffdioAPIArg struct{ API, Features, Ioctls uint64 }

type uffdioRegisterArg struct{ Start, Len, Mode, Ioctls uint64 }

// ethP8021Ex1 is ETH_P_802_EX1, the local experimental EtherType: what the
// send would carry, had it gone out.
const ethP8021Ex1 = 0x88b5

// Hold is one held reference.
type Hold struct {
	Ifindex int
	page    []byte
	uffd    int
	done    chan struct{}
	err     error // the send's result, once done
	once    sync.Once
	timer   *time.Timer
}

// Start holds a reference to the device with index ifindex in the network
// namespace ns for d (at most MaxHold), bringing the device up first (a
// send to a device that is down fails before it takes the reference). It
// returns once the sender waits in the fault with the reference taken.
func Start(ns netns.NsHandle, ifindex int, d time.Duration) (*Hold, error) {
	if d <= 0 || d > MaxHold {
		return nil, fmt.Errorf("heldref: hold %v: want 0 < d <= %v", d, MaxHold)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	l, err := h.LinkByIndex(ifindex)
	if err == nil {
		err = h.LinkSetUp(l)
	}
	h.Close()
	if err != nil {
		return nil, fmt.Errorf("heldref: bring ifindex %d up: %w", ifindex, err)
	}
	uffd, page, err := missingPage()
	if err != nil {
		return nil, err
	}
	hd := &Hold{Ifindex: ifindex, page: page, uffd: uffd, done: make(chan struct{})}
	started := make(chan error, 1)
	go hd.send(ns, started)
	if err := <-started; err != nil {
		hd.Release()
		return nil, err
	}
	// The sender is about to enter the kernel; wait until it sleeps in the
	// fault (or failed at once).
	if err := hd.waitBlocked(); err != nil {
		hd.Release()
		return nil, err
	}
	hd.timer = time.AfterFunc(d, hd.Release)
	return hd, nil
}

// missingPage maps one anonymous page registered with a new userfaultfd
// for missing-page faults, kernel ones included.
func missingPage() (int, []byte, error) {
	r, _, errno := unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC|unix.O_NONBLOCK, 0, 0)
	if errno != 0 {
		return -1, nil, fmt.Errorf("heldref: userfaultfd: %w (needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1)", errno)
	}
	uffd := int(r)
	api := uffdioAPIArg{API: uffdAPI}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(uffd), uffdioAPI, uintptr(unsafe.Pointer(&api))); errno != 0 {
		unix.Close(uffd)
		return -1, nil, fmt.Errorf("heldref: UFFDIO_API: %w", errno)
	}
	size := unix.Getpagesize()
	page, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Close(uffd)
		return -1, nil, fmt.Errorf("heldref: mmap: %w", err)
	}
	reg := uffdioRegisterArg{Start: uint64(uintptr(unsafe.Pointer(&page[0]))), Len: uint64(size), Mode: uffdioRegisterMissing}
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(uffd), uffdioRegister, uintptr(unsafe.Pointer(&reg))); errno != 0 {
		unix.Munmap(page)
		unix.Close(uffd)
		return -1, nil, fmt.Errorf("heldref: UFFDIO_REGISTER: %w", errno)
	}
	return uffd, page, nil
}

// send runs on a thread of its own that enters ns (and is never given
// back: it ends with the goroutine): it opens a packet socket there and
// sends from the missing page, which blocks until Release.
func (h *Hold) send(ns netns.NsHandle, started chan<- error) {
	defer close(h.done)
	runtime.LockOSThread()
	if err := unix.Setns(int(ns), unix.CLONE_NEWNET); err != nil {
		started <- fmt.Errorf("heldref: enter the namespace: %w", err)
		return
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		started <- fmt.Errorf("heldref: packet socket: %w", err)
		return
	}
	defer unix.Close(fd)
	started <- nil
	sa := unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: htons(ethP8021Ex1), Ifindex: int32(h.Ifindex)}
	_, _, errno := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&h.page[0])), 64, 0,
		uintptr(unsafe.Pointer(&sa)), unsafe.Sizeof(sa))
	if errno != 0 {
		h.err = errno
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// waitBlocked waits (up to 5 s) until the sender waits in the page fault,
// which userfaultfd reports as a fault event.
func (h *Hold) waitBlocked() error {
	fds := []unix.PollFd{{Fd: int32(h.uffd), Events: unix.POLLIN}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		select {
		case <-h.done:
			return fmt.Errorf("heldref: the send to ifindex %d returned at once: %v", h.Ifindex, h.err)
		default:
		}
		if time.Now().After(deadline) {
			return errors.New("heldref: the send did not fault in 5 s")
		}
		n, err := unix.Poll(fds, 10)
		if err == nil && n > 0 {
			return nil
		}
	}
}

// Done is closed when the reference has been dropped (the send returned).
func (h *Hold) Done() <-chan struct{} { return h.done }

// Release drops the reference now: the page is unmapped and the sender
// woken, so its send fails and puts the device. It waits (up to 5 s) for
// the send to return.
func (h *Hold) Release() {
	h.once.Do(func() {
		if h.timer != nil {
			h.timer.Stop()
		}
		_ = unix.Munmap(h.page)
		unix.Close(h.uffd)
	})
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
	}
}
