package nlbackend

import (
	"context"
	"fmt"

	"github.com/ndst-project/ndst/ndst"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NetnsList implements ndst.NetnsBackend: every namespace under /run/netns,
// ordered by name, those ndst did not create marked Foreign. Each is
// entered only to read its devices (a link dump on a socket opened inside
// it); the host ends of its veth pairs in ndst's namespace are its Peers.
func (b *Backend) NetnsList(ctx context.Context, _ ndst.NetnsListRequest) ([]ndst.Netns, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.ready(); err != nil {
		return nil, err
	}
	all, err := scanNetns()
	if err != nil {
		return nil, fmt.Errorf("netns list: %w", err)
	}
	host, err := b.dump()
	if err != nil {
		return nil, err
	}
	out := make([]ndst.Netns, 0, len(all))
	var fds []int
	var idx []int
	for _, n := range all {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if n.ID == b.id {
			continue // ndst's own namespace, where the veth pairs' host ends are
		}
		x := ndst.Netns{Name: n.Name, Foreign: !n.Ours && !n.Leftover, Leftover: n.Leftover}
		if n.ID != (nsID{}) {
			fd, err := unix.Open(nsPath(n.Name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
			if err == nil && isNetnsFD(fd) {
				if c, err := dialAt(netns.NsHandle(fd)); err == nil {
					if links, err := c.dumpLinks(dumpTries, dumpTimeout); err == nil {
						x.Devices = len(links)
						for _, l := range links {
							if l.Kind == "loopback" {
								x.LoUp = l.Up
							}
						}
					}
					c.close()
				}
				fds = append(fds, fd)
				idx = append(idx, len(out))
			} else if err == nil {
				unix.Close(fd)
			}
		}
		out = append(out, x)
	}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	if len(fds) > 0 {
		ids, err := b.c.getNsids(fds, ackTimeout)
		if err == nil {
			byNsid := map[int][]string{}
			for _, l := range host {
				if l.Kind == "veth" && l.PeerNsid >= 0 {
					byNsid[l.PeerNsid] = append(byNsid[l.PeerNsid], l.Name)
				}
			}
			for i, id := range ids {
				if id >= 0 {
					out[idx[i]].Peers = byNsid[id]
				}
			}
		}
	}
	return out, nil
}

var _ ndst.NetnsBackend = (*Backend)(nil)
