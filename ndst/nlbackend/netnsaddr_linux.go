package nlbackend

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/safefile"
)

// netns add --links K with addresses on the real kernel: once a
// namespace's links exist, the thread that made it (still inside it) sets
// each link up with its addresses through the namespace's own netlink
// socket, as add does in ndst's namespace (appendLinkConfig), and writes
// IPv6 forwarding to the namespace's own /proc/sys/net (a file opened from
// a thread inside a namespace is that namespace's).

// checkNetnsAddrs refuses IPv6 addresses or forwarding on a kernel without
// IPv6, before any namespace is made. (A new namespace starts from the
// kernel's defaults, so a host with IPv6 disabled in its own namespace
// still has it in new ones, unless net.core.devconf_inherit_init_net says
// otherwise: then the first address's error says so.)
func checkNetnsAddrs(a ndst.Addrs) error {
	if a.V6 == 0 && !a.Forwarding6 {
		return nil
	}
	if _, err := os.Stat("/proc/sys/net/ipv6"); errors.Is(err, os.ErrNotExist) {
		return ndst.Usagef("--addr6 and --ipv6-forwarding: this kernel has no IPv6 (no /proc/sys/net/ipv6: built without it, or booted with ipv6.disable=1); nothing was created")
	}
	return nil
}

// configureNsLinks sets the links of the namespace of the calling thread
// that p made up with p's addresses, on c (a socket opened inside it).
func configureNsLinks(c *conn, p nsPlan) error {
	if p.addrs.IsZero() || p.links == 0 {
		return nil
	}
	all, err := c.dumpLinks(dumpTries, dumpTimeout)
	if err != nil {
		return fmt.Errorf("list the new links: %w", err)
	}
	want := map[string]bool{}
	for k := range p.links {
		want[p.linkTmpl.Name(k)] = true
	}
	var links []link
	for _, l := range all {
		if want[l.Name] {
			links = append(links, l)
		}
	}
	if len(links) != p.links {
		return fmt.Errorf("found %d of the namespace's %d new links", len(links), p.links)
	}
	if p.addrs.Forwarding6 {
		for _, l := range links {
			if err := safefile.WriteKernelFile("/proc/sys/net/ipv6/conf/"+l.Name+"/forwarding", []byte("1\n")); err != nil {
				return fmt.Errorf("IPv6 forwarding on %s: %w", l.Name, err)
			}
		}
	}
	per := 1 + p.addrs.V4 + p.addrs.V6
	step := max(1, window/per)
	var m msg
	for i := 0; i < len(links); i += step {
		m.b = m.b[:0]
		sent := map[uint32]int{}
		for j := i; j < min(len(links), i+step); j++ {
			appendLinkConfig(&m, c, sent, j, links[j].Index, p.addrs)
		}
		if err := c.send(m.b); err != nil {
			return fmt.Errorf("send the addresses: %w", err)
		}
		var first error
		err := c.barrier(sent, time.Now().Add(nsCreateTimeout), func(j int, e error) {
			if first == nil {
				first = fmt.Errorf("set %s up with its addresses: %w", links[j].Name, e)
			}
		})
		if err == nil {
			err = first
		}
		if err != nil {
			return err
		}
	}
	return nil
}
