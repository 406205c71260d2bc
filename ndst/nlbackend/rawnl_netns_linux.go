package nlbackend

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Raw rtnetlink for network namespaces: setting lo up, veth pairs whose
// peer is created in another namespace, namespace ids (nsid), and the
// notifications that time a namespace's teardown.

// rtnetlink values x/sys does not name.
const (
	rtmDelNsid  = 0x59 // RTM_DELNSID
	rtmGetNsid  = 0x5a // RTM_GETNSID
	rtnlgrpLink = 1    // RTNLGRP_LINK
	rtnlgrpNsid = 28   // RTNLGRP_NSID
	sizeofRtgen = 4    // struct rtgenmsg, aligned
)

// appendSetUp appends an RTM_SETLINK that sets ifindex up, without asking
// for an acknowledgement.
func appendSetUp(m *msg, seq uint32, ifindex int) {
	off := m.begin(unix.RTM_SETLINK, unix.NLM_F_REQUEST, seq)
	m.ifinfo(int32(ifindex))
	// ifi_flags and ifi_change (struct ifinfomsg offsets 8 and 12).
	native.PutUint32(m.b[len(m.b)-8:], unix.IFF_UP)
	native.PutUint32(m.b[len(m.b)-4:], unix.IFF_UP)
	m.end(off)
}

// appendVethTo appends an RTM_NEWLINK creating a veth pair: name here,
// peer in the namespace peerNs (a descriptor), both in group; no
// acknowledgement asked for.
func appendVethTo(m *msg, seq uint32, name, peer string, group uint32, peerNs int) {
	off := m.begin(unix.RTM_NEWLINK, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL, seq)
	m.ifinfo(0)
	m.str(unix.IFLA_IFNAME, name)
	m.u32(unix.IFLA_GROUP, group)
	li := m.nest(unix.IFLA_LINKINFO)
	m.attr(unix.IFLA_INFO_KIND, []byte("veth"))
	data := m.nest(unix.IFLA_INFO_DATA)
	p := m.nest(vethInfoPeer)
	m.ifinfo(0)
	m.str(unix.IFLA_IFNAME, peer)
	m.u32(unix.IFLA_GROUP, group)
	m.u32(unix.IFLA_NET_NS_FD, uint32(peerNs))
	m.unnest(p)
	m.unnest(data)
	m.unnest(li)
	m.end(off)
}

// appendNsid appends an RTM_NEWNSID (assign the namespace nsfd an id in
// this socket's namespace, the kernel choosing it) or RTM_GETNSID (ask for
// it).
func appendNsid(m *msg, typ uint16, seq uint32, nsfd int) {
	flags := uint16(unix.NLM_F_REQUEST)
	if typ == rtmGetNsid {
		flags |= unix.NLM_F_ACK
	}
	off := m.begin(typ, flags, seq)
	m.b = append(m.b, make([]byte, sizeofRtgen)...)
	m.u32(unix.NETNSA_FD, uint32(nsfd))
	if typ == unix.RTM_NEWNSID {
		m.u32(unix.NETNSA_NSID, ^uint32(0)) // -1: the kernel picks
	}
	m.end(off)
}

// parseNsid decodes the nsid of an RTM_NEWNSID or RTM_DELNSID body.
func parseNsid(body []byte) (int, bool) {
	if len(body) < sizeofRtgen {
		return 0, false
	}
	id, ok := -1, false
	_ = attrs(body[sizeofRtgen:], func(typ uint16, v []byte) {
		if typ == unix.NETNSA_NSID && len(v) >= 4 {
			id, ok = int(int32(native.Uint32(v))), true
		}
	})
	return id, ok && id >= 0
}

// getNsids asks for the ids of the namespaces nsfds in this socket's
// namespace, in one window of requests; -1 for one without an id.
func (c *conn) getNsids(nsfds []int, timeout time.Duration) ([]int, error) {
	ids := make([]int, len(nsfds))
	for start := 0; start < len(nsfds); start += window {
		end := min(start+window, len(nsfds))
		var m msg
		want := map[uint32]int{}
		for i := start; i < end; i++ {
			seq := c.nextSeq()
			appendNsid(&m, rtmGetNsid, seq, nsfds[i])
			want[seq] = i
			ids[i] = -1
		}
		if err := c.send(m.b); err != nil {
			return nil, err
		}
		deadline := time.Now().Add(timeout)
		for len(want) > 0 {
			b, err := c.recvRaw(deadline)
			if err != nil {
				return nil, err
			}
			for len(b) >= unix.SizeofNlMsghdr {
				l := int(native.Uint32(b))
				if l < unix.SizeofNlMsghdr || l > len(b) {
					return nil, fmt.Errorf("malformed netlink message (length %d of %d)", l, len(b))
				}
				typ, seq := native.Uint16(b[4:]), native.Uint32(b[8:])
				body := b[unix.SizeofNlMsghdr:l]
				b = b[min(align4(l), len(b)):]
				i, ok := want[seq]
				if !ok {
					continue
				}
				switch typ {
				case unix.RTM_NEWNSID:
					if id, ok := parseNsid(body); ok {
						ids[i] = id
					}
				case unix.NLMSG_ERROR:
					delete(want, seq) // the ack follows the answer
				}
			}
		}
	}
	return ids, nil
}
