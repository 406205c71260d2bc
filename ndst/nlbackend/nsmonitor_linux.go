package nlbackend

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nsMonitor listens in ndst's namespace for what a namespace teardown
// announces there: RTM_DELLINK of the devices unregistered (the host ends
// of veth pairs go with their namespace) and RTM_DELNSID, which the
// kernel's cleanup_net sends for each namespace of a batch as it starts
// (unhash_nsid). Each event is stamped with CLOCK_MONOTONIC on arrival, by
// a thread that does nothing but read.
type nsMonitor struct {
	fd   int
	done chan struct{}
	stop atomic.Bool

	mu      sync.Mutex
	dellink map[int]int64 // ifindex -> time
	delnsid map[int]int64 // nsid -> time
	lost    int           // ENOBUFS: events the socket's buffer dropped
	changed chan struct{} // signalled (non-blocking) on each event
}

// monitorBuf is the monitor socket's receive buffer: room for the
// notifications of many thousands of devices at once.
const monitorBuf = 64 << 20

func startMonitor(ns netns.NsHandle) (*nsMonitor, error) {
	fd, err := socketAt(ns, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1 << (rtnlgrpLink - 1)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind the monitor socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, rtnlgrpNsid); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("join RTNLGRP_NSID: %w", err)
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, monitorBuf) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, monitorBuf)
	}
	tv := unix.NsecToTimeval(20e6) // the reader checks for the end every 20 ms
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	m := &nsMonitor{fd: fd, done: make(chan struct{}), dellink: map[int]int64{}, delnsid: map[int]int64{}, changed: make(chan struct{}, 1)}
	go m.loop(fd)
	return m, nil
}

func (m *nsMonitor) loop(fd int) {
	defer close(m.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, 1<<20)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		now := sender.Monotonic()
		switch {
		case m.stop.Load():
			return
		case err == unix.EAGAIN || err == unix.EINTR:
			continue
		case err == unix.ENOBUFS:
			m.mu.Lock()
			m.lost++
			m.mu.Unlock()
			continue
		case err != nil:
			return
		}
		m.mu.Lock()
		for b := buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(native.Uint32(b))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				break
			}
			typ := native.Uint16(b[4:])
			body := b[unix.SizeofNlMsghdr:l]
			b = b[min(align4(l), len(b)):]
			switch typ {
			case unix.RTM_DELLINK:
				if len(body) >= sizeofIfInfomsg {
					m.dellink[int(int32(native.Uint32(body[4:])))] = now
				}
			case rtmDelNsid:
				if id, ok := parseNsid(body); ok {
					m.delnsid[id] = now
				}
			}
		}
		m.mu.Unlock()
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
}

// times returns when ifindex was deleted and when nsid's cleanup started
// (0: not seen).
func (m *nsMonitor) gone(ifindex int) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dellink[ifindex]
}

func (m *nsMonitor) started(nsid int) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.delnsid[nsid]
}

func (m *nsMonitor) lostEvents() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lost
}

// close stops the reader (within its 20 ms receive timeout).
func (m *nsMonitor) close() {
	m.stop.Store(true)
	<-m.done
	unix.Close(m.fd)
}
