package nlbackend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Raw rtnetlink: the requests that go faster than one-at-a-time library
// calls (pipelined creates and group moves, the group delete) and a lean
// link dump that reads only the attributes ndst needs.

const (
	rtextFilterSkipStats = 1 << 3 // RTEXT_FILTER_SKIP_STATS
	vethInfoPeer         = 1      // VETH_INFO_PEER
	sizeofIfInfomsg      = 16
	nlaTypeMask          = ^uint16(unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
	// recvBufSize is the user buffer for one datagram; dumps are packed by
	// the kernel into datagrams of at most this size (it sizes them from
	// the reader's previous buffer, never above 64 KiB-ish plus headroom).
	recvBufSize = 1 << 20
)

var native = binary.NativeEndian

// msg builds one netlink message (or several, back to back) in place.
type msg struct{ b []byte }

func align4(n int) int { return (n + 3) &^ 3 }

// begin starts a message and returns its offset.
func (m *msg) begin(typ, flags uint16, seq uint32) int {
	off := len(m.b)
	m.b = append(m.b, make([]byte, unix.SizeofNlMsghdr)...)
	native.PutUint16(m.b[off+4:], typ)
	native.PutUint16(m.b[off+6:], flags)
	native.PutUint32(m.b[off+8:], seq)
	return off
}

// end fixes the length of the message started at off.
func (m *msg) end(off int) { native.PutUint32(m.b[off:], uint32(len(m.b)-off)) }

// ifinfo appends a struct ifinfomsg for ifindex index.
func (m *msg) ifinfo(index int32) {
	off := len(m.b)
	m.b = append(m.b, make([]byte, sizeofIfInfomsg)...)
	m.b[off] = unix.AF_UNSPEC
	native.PutUint32(m.b[off+4:], uint32(index))
}

// attr appends one attribute, padded to 4 bytes.
func (m *msg) attr(typ uint16, data []byte) {
	off := len(m.b)
	l := unix.SizeofRtAttr + len(data)
	m.b = append(m.b, make([]byte, align4(l))...)
	native.PutUint16(m.b[off:], uint16(l))
	native.PutUint16(m.b[off+2:], typ)
	copy(m.b[off+unix.SizeofRtAttr:], data)
}

func (m *msg) u32(typ uint16, v uint32) {
	var b [4]byte
	native.PutUint32(b[:], v)
	m.attr(typ, b[:])
}

func (m *msg) str(typ uint16, s string) { m.attr(typ, append([]byte(s), 0)) }

// nest starts a nested attribute; close it with unnest.
func (m *msg) nest(typ uint16) int {
	off := len(m.b)
	m.attr(typ, nil)
	return off
}

func (m *msg) unnest(off int) {
	native.PutUint16(m.b[off:], uint16(len(m.b)-off))
	native.PutUint16(m.b[off+2:], native.Uint16(m.b[off+2:])|unix.NLA_F_NESTED)
}

// conn is one rtnetlink socket inside the namespace. Its descriptor is
// not registered with Go's network poller (unlike a socket made by
// nl.GetNetlinkSocketAt, which wraps it in an os.File): the poller would
// otherwise wake an idle thread for every acknowledgement the kernel queues,
// some 2.5 context switches per create that only slow the sender down. It
// is read with MSG_DONTWAIT and poll(2) instead.
type conn struct {
	fd  int
	seq uint32
	buf []byte
}

// dialAt opens an rtnetlink socket in ns without moving the process.
func dialAt(ns netns.NsHandle) (*conn, error) {
	fd, err := socketAt(ns, unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	return setupConn(fd)
}

// setupConn binds a new rtnetlink socket and sets its options.
func setupConn(fd int) (*conn, error) {
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind the netlink socket: %w", err)
	}
	c := &conn{fd: fd, seq: uint32(time.Now().UnixNano())}
	// Short acknowledgements (no echo of the request) with error strings;
	// a big receive buffer so that a window of acknowledgements fits.
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	_ = unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	if unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20) != nil {
		_ = unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 8<<20)
	}
	return c, nil
}

func (c *conn) close() {
	if c != nil && c.fd > 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
}

func (c *conn) nextSeq() uint32 { c.seq++; return c.seq }

// send writes one datagram (one or more messages). rtnetlink handles the
// requests synchronously inside this call: when it returns, the kernel's
// answers are queued on the socket.
//
// It is a raw system call: Go's scheduler is not told about it, so its
// monitor thread does not wake every 20 µs to consider taking the
// processor of a thread that spends most of its time in creates of about
// 100 µs each (measured: some 470 extra wake-ups and 3 times the context
// switches of `ip -batch` for 1000 creates). The cost is that a stop of the
// world for garbage collection waits for the call to return; nothing
// allocates while the sender waits in the kernel, and the kernel returns
// once it has the RTNL lock, so that wait is the one the request has anyway.
func (c *conn) send(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	for {
		_, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		switch e {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return e
	}
}

var errTimeout = errors.New("the kernel did not answer in time")

// ackError decodes an NLMSG_ERROR message: nil for an acknowledgement,
// else the errno, with the kernel's extended message when there is one
// (sender.ParseAck).
func ackError(m syscall.NetlinkMessage) error {
	errno, text, err := sender.ParseAck(m.Header.Flags, m.Data)
	switch {
	case err != nil:
		return err
	case errno == 0:
		return nil
	case text != "":
		return &sender.KernelError{Errno: errno, Msg: text}
	}
	return errno
}

// acks collects acknowledgements for the sequence numbers in want (seq ->
// index), calling done(index, err) for each, until all have arrived or the
// deadline passes.
func (c *conn) acks(want map[uint32]int, deadline time.Time, done func(i int, err error)) error {
	for len(want) > 0 {
		b, err := c.recvRaw(deadline)
		if err != nil {
			return err
		}
		// Parsed in place: a window of creates reads one datagram per
		// acknowledgement.
		for len(b) >= unix.SizeofNlMsghdr {
			l := int(native.Uint32(b))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return fmt.Errorf("malformed netlink message (length %d of %d)", l, len(b))
			}
			typ, flags, seq := native.Uint16(b[4:]), native.Uint16(b[6:]), native.Uint32(b[8:])
			body := b[unix.SizeofNlMsghdr:l]
			b = b[min(align4(l), len(b)):]
			if typ != unix.NLMSG_ERROR {
				continue
			}
			i, ok := want[seq]
			if !ok {
				continue
			}
			delete(want, seq)
			done(i, ackError(syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Flags: flags, Seq: seq}, Data: body}))
		}
	}
	return nil
}

// barrier collects the answers to requests sent without NLM_F_ACK, which
// the kernel answers only when they fail: it sends a barrier (NLMSG_NOOP
// with NLM_F_ACK) and reads until the barrier's acknowledgement, calling
// failed(index, err) for each error answer to a request in sent (seq ->
// index) on the way. rtnetlink handles every request inside its send, in
// order, so a request not reported by then succeeded. Leaving out the
// acknowledgements of successful creates saves the kernel an skb and the
// reader a system call per link.
func (c *conn) barrier(sent map[uint32]int, deadline time.Time, failed func(i int, err error)) error {
	var m msg
	seq := c.nextSeq()
	off := m.begin(unix.NLMSG_NOOP, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq)
	m.end(off)
	if err := c.send(m.b); err != nil {
		return err
	}
	for {
		b, err := c.recvRaw(deadline)
		if err != nil {
			return err
		}
		for len(b) >= unix.SizeofNlMsghdr {
			l := int(native.Uint32(b))
			if l < unix.SizeofNlMsghdr || l > len(b) {
				return fmt.Errorf("malformed netlink message (length %d of %d)", l, len(b))
			}
			typ, flags, mseq := native.Uint16(b[4:]), native.Uint16(b[6:]), native.Uint32(b[8:])
			body := b[unix.SizeofNlMsghdr:l]
			b = b[min(align4(l), len(b)):]
			if typ != unix.NLMSG_ERROR {
				continue
			}
			e := ackError(syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Flags: flags, Seq: mseq}, Data: body})
			if mseq == seq {
				if e != nil {
					return fmt.Errorf("netlink barrier: %w", e)
				}
				return nil
			}
			if i, ok := sent[mseq]; ok && e != nil {
				failed(i, e)
			}
		}
	}
}

// request sends one message and waits for its acknowledgement.
func (c *conn) request(m *msg, seq uint32, timeout time.Duration) error {
	if err := c.send(m.b); err != nil {
		return err
	}
	var result error
	err := c.acks(map[uint32]int{seq: 0}, time.Now().Add(timeout), func(_ int, e error) { result = e })
	if err != nil {
		return err
	}
	return result
}

// link is one device as the lean dump sees it.
type link struct {
	Index    int
	Name     string
	AltNames []string // alternative names: they take names too
	Kind     string
	Group    uint32
	Up       bool
	Peer     int  // IFLA_LINK: for veth, the peer's ifindex
	PeerHere bool // the peer is in this namespace (no IFLA_LINK_NETNSID)
	// PeerNsid is the peer's namespace as this namespace numbers it
	// (IFLA_LINK_NETNSID); -1 when the peer is here.
	PeerNsid int
}

// errDumpKeptChanging is returned when every retry of a dump was interrupted.
var errDumpKeptChanging = errors.New("the device list kept changing while it was read (dump interrupted on every retry)")

// dumpLinks lists the namespace's links, retrying interrupted dumps up to
// tries times.
func (c *conn) dumpLinks(tries int, timeout time.Duration) ([]link, error) {
	for range tries {
		links, intr, err := c.dumpOnce(timeout)
		if err != nil {
			return nil, err
		}
		if !intr {
			return links, nil
		}
	}
	return nil, errDumpKeptChanging
}

func (c *conn) dumpOnce(timeout time.Duration) ([]link, bool, error) {
	var m msg
	seq := c.nextSeq()
	off := m.begin(unix.RTM_GETLINK, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, seq)
	m.ifinfo(0)
	m.u32(unix.IFLA_EXT_MASK, rtextFilterSkipStats)
	m.end(off)
	if err := c.send(m.b); err != nil {
		return nil, false, err
	}
	deadline := time.Now().Add(timeout)
	var links []link
	intr := false
	for {
		b, err := c.recvRaw(deadline)
		if err != nil {
			return nil, false, err
		}
		var done, chunkIntr bool
		links, done, chunkIntr, err = parseDumpChunk(b, seq, links)
		if err != nil {
			return nil, false, err
		}
		intr = intr || chunkIntr
		if done {
			return links, intr, nil
		}
	}
}

// parseDumpChunk decodes one datagram of the answer to the link dump with
// sequence number seq, appending its links to links. done reports the end
// of the dump (NLMSG_DONE, or an NLMSG_ERROR acknowledgement), intr that
// the kernel marked a message interrupted (NLM_F_DUMP_INTR); messages of
// other sequence numbers are skipped. It parses in place, without copies or
// per-attribute allocations (the dump is on the path of every add and del),
// and never reads outside b: a malformed message is an error.
func parseDumpChunk(b []byte, seq uint32, links []link) (_ []link, done, intr bool, err error) {
	for len(b) >= unix.SizeofNlMsghdr {
		l := int(native.Uint32(b))
		if l < unix.SizeofNlMsghdr || l > len(b) {
			return links, false, intr, fmt.Errorf("malformed netlink message (length %d of %d)", l, len(b))
		}
		typ, flags, mseq := native.Uint16(b[4:]), native.Uint16(b[6:]), native.Uint32(b[8:])
		body := b[unix.SizeofNlMsghdr:l]
		b = b[min(align4(l), len(b)):]
		if mseq != seq {
			continue
		}
		if flags&unix.NLM_F_DUMP_INTR != 0 {
			intr = true
		}
		switch typ {
		case unix.NLMSG_DONE:
			return links, true, intr, nil
		case unix.NLMSG_ERROR:
			nm := syscall.NetlinkMessage{Header: syscall.NlMsghdr{Flags: flags, Seq: mseq}, Data: body}
			if err := ackError(nm); err != nil {
				return links, false, intr, err
			}
			return links, true, intr, nil
		case unix.RTM_NEWLINK:
			lk, err := parseLink(body)
			if err != nil {
				return links, false, intr, err
			}
			links = append(links, lk)
		}
	}
	return links, false, intr, nil
}

// recvRaw reads one datagram into the connection's buffer (valid until the
// next read), waiting at most until deadline.
func (c *conn) recvRaw(deadline time.Time) ([]byte, error) {
	if c.buf == nil {
		c.buf = make([]byte, recvBufSize)
	}
	for {
		n, _, flags, _, err := unix.Recvmsg(c.fd, c.buf, nil, unix.MSG_DONTWAIT)
		switch {
		case err == unix.EAGAIN:
			wait := time.Until(deadline)
			if wait <= 0 {
				return nil, errTimeout
			}
			ms := int(min(max(wait/time.Millisecond, 1), 1000))
			if _, perr := unix.Poll([]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}, ms); perr != nil && perr != unix.EINTR {
				return nil, perr
			}
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, err
		}
		if flags&unix.MSG_TRUNC != 0 {
			return nil, fmt.Errorf("netlink answer larger than %d bytes", len(c.buf))
		}
		return c.buf[:n], nil
	}
}

// attrs calls fn for each attribute in b (type without flag bits).
func attrs(b []byte, fn func(typ uint16, val []byte)) error {
	for len(b) >= unix.SizeofRtAttr {
		l := int(native.Uint16(b))
		if l < unix.SizeofRtAttr || l > len(b) {
			return fmt.Errorf("malformed netlink attribute (length %d of %d)", l, len(b))
		}
		fn(native.Uint16(b[2:])&nlaTypeMask, b[unix.SizeofRtAttr:l])
		b = b[min(align4(l), len(b)):]
	}
	return nil
}

// parseLink decodes the body of an RTM_NEWLINK message.
func parseLink(body []byte) (link, error) {
	if len(body) < sizeofIfInfomsg {
		return link{}, fmt.Errorf("short RTM_NEWLINK message")
	}
	l := link{
		Index:    int(int32(native.Uint32(body[4:]))),
		Up:       native.Uint32(body[8:])&unix.IFF_UP != 0,
		PeerHere: true,
		PeerNsid: -1,
	}
	if native.Uint16(body[2:]) == unix.ARPHRD_LOOPBACK {
		l.Kind = "loopback"
	}
	var nested error
	err := attrs(body[sizeofIfInfomsg:], func(typ uint16, v []byte) {
		switch typ {
		case unix.IFLA_IFNAME:
			l.Name = unix.ByteSliceToString(v)
		case unix.IFLA_GROUP:
			if len(v) >= 4 {
				l.Group = native.Uint32(v)
			}
		case unix.IFLA_LINK:
			if len(v) >= 4 {
				l.Peer = int(int32(native.Uint32(v)))
			}
		case unix.IFLA_LINK_NETNSID:
			l.PeerHere = false
			if len(v) >= 4 {
				l.PeerNsid = int(int32(native.Uint32(v)))
			}
		case unix.IFLA_PROP_LIST:
			nested = attrs(v, func(t uint16, pv []byte) {
				if t == unix.IFLA_ALT_IFNAME {
					l.AltNames = append(l.AltNames, unix.ByteSliceToString(pv))
				}
			})
		case unix.IFLA_LINKINFO:
			if err := attrs(v, func(t uint16, iv []byte) {
				if t == unix.IFLA_INFO_KIND {
					l.Kind = unix.ByteSliceToString(iv)
				}
			}); err != nil {
				nested = err
			}
		}
	})
	if err == nil {
		err = nested
	}
	return l, err
}

// appendNewLink appends an RTM_NEWLINK that creates one link (for veth, a
// pair named name/peer) in group.
// It asks for no acknowledgement: the kernel answers only a failure (see
// barrier).
func appendNewLink(m *msg, seq uint32, kind, name, peer string, group uint32) {
	off := m.begin(unix.RTM_NEWLINK, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL, seq)
	m.ifinfo(0)
	m.str(unix.IFLA_IFNAME, name)
	m.u32(unix.IFLA_GROUP, group)
	li := m.nest(unix.IFLA_LINKINFO)
	m.attr(unix.IFLA_INFO_KIND, []byte(kind))
	if kind == "veth" {
		data := m.nest(unix.IFLA_INFO_DATA)
		p := m.nest(vethInfoPeer)
		m.ifinfo(0)
		m.str(unix.IFLA_IFNAME, peer)
		m.u32(unix.IFLA_GROUP, group)
		m.unnest(p)
		m.unnest(data)
	}
	m.unnest(li)
	m.end(off)
}

// appendSetGroup appends an RTM_SETLINK moving ifindex to group.
// It asks for no acknowledgement: the kernel answers only a failure (see
// barrier).
func appendSetGroup(m *msg, seq uint32, ifindex int, group uint32) {
	off := m.begin(unix.RTM_SETLINK, unix.NLM_F_REQUEST, seq)
	m.ifinfo(int32(ifindex))
	m.u32(unix.IFLA_GROUP, group)
	m.end(off)
}

// appendDelLink appends an RTM_DELLINK: of ifindex when it is > 0, else of
// every device in group.
func appendDelLink(m *msg, seq uint32, ifindex int, group uint32) {
	off := m.begin(unix.RTM_DELLINK, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq)
	m.ifinfo(int32(ifindex))
	if ifindex <= 0 {
		m.u32(unix.IFLA_GROUP, group)
	}
	m.end(off)
}
