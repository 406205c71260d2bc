package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/osthread"
	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// Up links with addresses on the real kernel (ndst.Addrs): once an add has
// made its links, each is set up (RTM_SETLINK with IFF_UP), given the IPv6
// forwarding setting first when asked (net.ipv6.conf.DEV.forwarding,
// written from a thread inside ndst's namespace, whose /proc/sys/net it
// then sees), and its addresses (one RTM_NEWADDR each, ndst.Addr4 and
// ndst.Addr6 of its ifindex), the requests of a window sent in one
// datagram as the creates are.

// checkAddrs refuses addresses the namespace cannot take before anything
// is made: IPv6 ones where IPv6 is absent or disabled.
func (b *Backend) checkAddrs(a ndst.Addrs) error {
	if a.V6 == 0 && !a.Forwarding6 {
		return nil
	}
	var why error
	err := osthread.Throwaway(func() error {
		if err := unix.Setns(int(b.ns), unix.CLONE_NEWNET); err != nil {
			return err
		}
		v, err := os.ReadFile("/proc/sys/net/ipv6/conf/default/disable_ipv6")
		switch {
		case errors.Is(err, os.ErrNotExist):
			why = errors.New("this kernel has no IPv6 (no /proc/sys/net/ipv6: built without it, or booted with ipv6.disable=1)")
		case err != nil:
			return err
		case len(v) > 0 && v[0] == '1':
			why = fmt.Errorf("IPv6 is disabled in namespace %s (net.ipv6.conf.default.disable_ipv6 = 1)", b.o.Netns)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("check IPv6 in namespace %s: %w", b.o.Netns, err)
	}
	if why != nil {
		return ndst.Usagef("--addr6 and --ipv6-forwarding: %v; nothing was created", why)
	}
	return nil
}

// appendNewAddr appends an RTM_NEWADDR of p on ifindex; no acknowledgement
// asked for (see barrier).
func appendNewAddr(m *msg, seq uint32, ifindex int, p netip.Prefix) {
	off := m.begin(unix.RTM_NEWADDR, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_EXCL, seq)
	family := byte(unix.AF_INET6)
	if p.Addr().Is4() {
		family = unix.AF_INET
	}
	// struct ifaddrmsg: family, prefix length, flags, scope, index.
	o := len(m.b)
	m.b = append(m.b, make([]byte, unix.SizeofIfAddrmsg)...)
	m.b[o], m.b[o+1] = family, byte(p.Bits())
	native.PutUint32(m.b[o+4:], uint32(ifindex))
	a := p.Addr().AsSlice()
	m.attr(unix.IFA_LOCAL, a)
	m.attr(unix.IFA_ADDRESS, a)
	m.end(off)
}

// configureLinks sets the links up with their addresses, a window at a
// time, and returns how long it took.
func (b *Backend) configureLinks(ctx context.Context, links []link, a ndst.Addrs) (time.Duration, error) {
	if !a.Up || len(links) == 0 {
		return 0, nil
	}
	t0 := time.Now()
	if a.Forwarding6 {
		if err := b.setForwarding6(links); err != nil {
			return time.Since(t0), err
		}
	}
	var m msg
	for i := 0; i < len(links); i += window / (1 + a.V4 + a.V6) {
		if err := ctx.Err(); err != nil {
			return time.Since(t0), err
		}
		end := min(len(links), i+max(1, window/(1+a.V4+a.V6)))
		m.b = m.b[:0]
		sent := map[uint32]int{}
		for j := i; j < end; j++ {
			appendLinkConfig(&m, b.c, sent, j, links[j].Index, a)
		}
		if err := b.c.send(m.b); err != nil {
			return time.Since(t0), fmt.Errorf("send the addresses: %w", err)
		}
		var first error
		err := b.bounded(ackTimeout+time.Second, "add addresses", func() error {
			return b.c.barrier(sent, time.Now().Add(ackTimeout), func(j int, e error) {
				if first == nil {
					first = fmt.Errorf("set %s up with its addresses: %w", links[j].Name, e)
				}
			})
		})
		if err == nil {
			err = first
		}
		if err != nil {
			return time.Since(t0), err
		}
	}
	return time.Since(t0), nil
}

// appendLinkConfig appends the requests that set link ifindex up with its
// addresses, each noted as j in sent.
func appendLinkConfig(m *msg, c *conn, sent map[uint32]int, j, ifindex int, a ndst.Addrs) {
	s := c.nextSeq()
	sent[s] = j
	appendSetUp(m, s, ifindex)
	for k := range a.V6 {
		s := c.nextSeq()
		sent[s] = j
		appendNewAddr(m, s, ifindex, ndst.Addr6(ifindex, k))
	}
	for k := range a.V4 {
		s := c.nextSeq()
		sent[s] = j
		appendNewAddr(m, s, ifindex, ndst.Addr4(ifindex, k))
	}
}

// setForwarding6 writes net.ipv6.conf.DEV.forwarding=1 for each link, from
// a thread inside ndst's namespace.
func (b *Backend) setForwarding6(links []link) error {
	return osthread.Throwaway(func() error {
		if err := unix.Setns(int(b.ns), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter namespace %s: %w", b.o.Netns, err)
		}
		for _, l := range links {
			p := "/proc/sys/net/ipv6/conf/" + l.Name + "/forwarding"
			if err := safefile.WriteKernelFile(p, []byte("1\n")); err != nil {
				return fmt.Errorf("IPv6 forwarding on %s: %w", l.Name, err)
			}
		}
		return nil
	})
}

// linksOfGroup returns the links of group, in ifindex order.
func (b *Backend) linksOfGroup(group uint32) ([]link, error) {
	all, err := b.dump()
	if err != nil {
		return nil, err
	}
	var out []link
	for _, l := range all {
		if l.Group == group {
			out = append(out, l)
		}
	}
	return out, nil
}

// setUpAdded configures the links an add made (its group) and notes it.
func (b *Backend) setUpAdded(ctx context.Context, res *ndst.Result, group uint32, a ndst.Addrs) error {
	links, err := b.linksOfGroup(group)
	if err != nil {
		return fmt.Errorf("list the new links: %w", err)
	}
	d, err := b.configureLinks(ctx, links, a)
	if res.Counters == nil {
		res.Counters = map[string]int64{}
	}
	res.Counters["addr_ns"] = int64(d)
	if err != nil {
		return fmt.Errorf("%w (the links exist; ndst del or reset removes them)", err)
	}
	res.Notes = append(res.Notes, fmt.Sprintf("each device %s, in %s", a, d.Round(time.Microsecond)))
	return nil
}
