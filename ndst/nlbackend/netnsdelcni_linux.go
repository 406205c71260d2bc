package nlbackend

import (
	"fmt"
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netns del --cni on the real kernel: before each namespace goes, its veth
// is deleted from inside it, as the reference CNI plugins' DEL does
// (ip.DelLinkByName of the pod's interface in the pod's namespace): one
// RTM_DELLINK of the inner end on a socket opened in the namespace, whose
// acknowledgement comes once rtnl_unlock's netdev_run_todo has freed both
// ends; then the namespace is deleted as ip netns del does, and the next
// pod's turn comes without waiting for its cleanup.

// cniDelVeth deletes t's veth (the first veth link inside it) and waits
// for the request's answer; it returns how long that took, 0 when the
// namespace has no veth.
func cniDelVeth(t *nsTarget) (time.Duration, error) {
	fd, err := unix.Open(nsPath(t.name), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", nsPath(t.name), err)
	}
	if id, err := fdID(fd); err != nil || id != t.id || !isNetnsFD(fd) {
		unix.Close(fd)
		return 0, fmt.Errorf("%s changed before its veth was deleted (by another program?); left alone", nsPath(t.name))
	}
	c, err := dialAt(netns.NsHandle(fd))
	unix.Close(fd)
	if err != nil {
		return 0, fmt.Errorf("open a netlink socket in %s: %w", t.name, err)
	}
	defer c.close()
	links, err := c.dumpLinks(dumpTries, dumpTimeout)
	if err != nil {
		return 0, fmt.Errorf("list the links of %s: %w", t.name, err)
	}
	inner := -1
	for _, l := range links {
		if l.Kind == "veth" {
			inner = l.Index
			break
		}
	}
	if inner < 0 {
		return 0, nil
	}
	var m msg
	seq := c.nextSeq()
	appendDelLink(&m, seq, inner, 0)
	t0 := sender.Monotonic()
	if err := c.request(&m, seq, requestTimeout); err != nil {
		return 0, fmt.Errorf("delete the veth of %s: %w", t.name, err)
	}
	return time.Duration(sender.Monotonic() - t0), nil
}
