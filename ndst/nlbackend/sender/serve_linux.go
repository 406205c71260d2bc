package sender

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// envChild marks the child: its value is the number of files after the
// two pipes (fd 3 requests in, fd 4 replies out, fds 5... the files).
const envChild = "NDST_SENDER"

const firstFD = 3

func init() {
	n, ok := childFiles()
	if !ok {
		return
	}
	// init runs on the main thread; it stays the sender's for good.
	runtime.LockOSThread()
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	fds := make([]int, n)
	for i := range fds {
		fds[i] = firstFD + 2 + i
	}
	req := os.NewFile(firstFD, "requests")
	rep := os.NewFile(firstFD+1, "replies")
	if err := serve(req, rep, fds, true, processCPU); err != nil {
		fmt.Fprintf(os.Stderr, "ndst sender: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// childFiles reports whether this process is a sender child, and how many
// files it was given.
func childFiles() (int, bool) {
	v, ok := os.LookupEnv(envChild)
	if !ok {
		return 0, false
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' || n > 64 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, v != ""
}

func processCPU() int64 { return clockNS(unix.CLOCK_PROCESS_CPUTIME_ID) }
func threadCPU() int64  { return clockNS(unix.CLOCK_THREAD_CPUTIME_ID) }
func monotonic() int64  { return clockNS(unix.CLOCK_MONOTONIC) }

func clockNS(id int32) int64 {
	var ts unix.Timespec
	if unix.ClockGettime(id, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// serve is the sender loop, on the calling (locked) thread: hello, then one
// reply per request until the request pipe closes.
func serve(req io.Reader, rep io.Writer, fds []int, child bool, cpu func() int64) error {
	h := hello{PID: int32(unix.Getpid()), TID: int32(unix.Gettid()), Child: child}
	if err := writeFrame(rep, h.encode()); err != nil {
		return err
	}
	s := &server{fds: fds, cpu: cpu, buf: make([]byte, 64<<10)}
	br := bufio.NewReader(req)
	for {
		b, err := readFrame(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		q, err := decodeRequest(b)
		if err != nil {
			return err
		}
		if err := writeFrame(rep, s.do(q).encode()); err != nil {
			return nil // ndst stopped waiting and went away
		}
	}
}

type server struct {
	fds     []int
	cpu     func() int64
	buf     []byte
	handles map[int]*netlink.Handle
}

func (s *server) do(q Request) Reply {
	if q.File < 0 || q.File >= len(s.fds) {
		return Reply{Msg: fmt.Sprintf("sender: no file %d (it has %d)", q.File, len(s.fds))}
	}
	fd := s.fds[q.File]
	var r Reply
	var err error
	switch q.Op {
	case OpNetlink:
		r.T0, r.CPU0 = monotonic(), s.cpu()
		r.Errno, r.Msg, err = s.netlink(fd, q.Data, q.Seq)
	case OpLinkDel:
		h, herr := s.handle(q.File, fd)
		if herr != nil {
			return Reply{Msg: herr.Error()}
		}
		r.T0, r.CPU0 = monotonic(), s.cpu()
		err = h.LinkDel(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: int(q.Ifindex)}})
	case OpWrite:
		r.T0, r.CPU0 = monotonic(), s.cpu()
		for {
			_, err = unix.Pwrite(fd, q.Data, 0)
			if err != unix.EINTR {
				break
			}
		}
	default:
		return Reply{Msg: fmt.Sprintf("sender: unknown op %d", q.Op)}
	}
	r.T1, r.CPU1 = monotonic(), s.cpu()
	if err != nil {
		if e, ok := err.(syscall.Errno); ok {
			r.Errno = e
		} else if e, ok := err.(unix.Errno); ok {
			r.Errno = syscall.Errno(e)
		} else {
			r.Msg = err.Error()
		}
	}
	return r
}

// handle is the library's handle in the namespace fd, opened on first use
// (its sockets are made in the namespace without moving this thread for
// good).
func (s *server) handle(i, fd int) (*netlink.Handle, error) {
	if h := s.handles[i]; h != nil {
		return h, nil
	}
	h, err := netlink.NewHandleAt(netns.NsHandle(fd), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("sender: open a netlink handle in the namespace: %v", err)
	}
	if s.handles == nil {
		s.handles = map[int]*netlink.Handle{}
	}
	s.handles[i] = h
	return h, nil
}

// netlink sends one request on the socket fd and reads until its
// acknowledgement. The kernel handles the request inside the send.
func (s *server) netlink(fd int, msg []byte, seq uint32) (syscall.Errno, string, error) {
	for {
		_, err := unix.Write(fd, msg)
		if err == nil {
			break
		}
		if err != unix.EINTR {
			return 0, "", err
		}
	}
	ne := binary.NativeEndian
	for {
		n, err := unix.Read(fd, s.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, "", err
		}
		if n == 0 {
			return 0, "", io.ErrUnexpectedEOF
		}
		for b := s.buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
			l := int(ne.Uint32(b))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return 0, "", fmt.Errorf("malformed netlink message (length %d of %d)", l, len(b))
			}
			typ, flags, mseq := ne.Uint16(b[4:]), ne.Uint16(b[6:]), ne.Uint32(b[8:])
			body := b[unix.SizeofNlMsghdr:l]
			b = b[min((l+3)&^3, len(b)):]
			if typ == unix.NLMSG_ERROR && mseq == seq {
				return ParseAck(flags, body)
			}
		}
	}
}
