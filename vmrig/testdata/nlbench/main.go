// Command nlbench is a tiny raw-netlink program for the VM rig: it creates
// dummy links and times their deletion, one by one or as one group delete,
// using only the standard library (so it builds static with CGO_ENABLED=0).
// It works in the network namespace it runs in: run it only inside a guest.
//
//	nlbench add N GROUP      create dummy links nlb0..nlbN-1 in link group GROUP
//	nlbench count            print the number of links named nlb*
//	nlbench delone           delete every nlb* link, one RTM_DELLINK each; print ms/device
//	nlbench delgroup GROUP   delete the links of GROUP with one RTM_DELLINK; print the total
package main

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	iflaGroup    = 27
	iflaLinkInfo = 18
	iflaInfoKind = 1
	prefix       = "nlb"
)

type conn struct {
	fd  int
	seq uint32
}

func dial() (*conn, error) {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return nil, err
	}
	return &conn{fd: fd}, nil
}

func attr(typ uint16, data []byte) []byte {
	l := 4 + len(data)
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], data)
	return b
}

func u32(v uint32) []byte { b := make([]byte, 4); binary.NativeEndian.PutUint32(b, v); return b }

// do sends one request and reads until its ACK (or the end of a dump),
// handing every reply message to fn.
func (c *conn) do(typ, flags uint16, ifindex int32, attrs []byte, fn func(syscall.NetlinkMessage)) error {
	c.seq++
	body := make([]byte, syscall.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(body[4:], uint32(ifindex))
	body = append(body, attrs...)
	msg := make([]byte, syscall.NLMSG_HDRLEN, syscall.NLMSG_HDRLEN+len(body))
	msg = append(msg, body...)
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], flags|syscall.NLM_F_REQUEST|syscall.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], c.seq)
	if err := syscall.Sendto(c.fd, msg, 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := syscall.Recvfrom(c.fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != c.seq {
				continue
			}
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				return nil
			case syscall.NLMSG_ERROR:
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return syscall.Errno(-e)
				}
				return nil
			default:
				if fn != nil {
					fn(m)
				}
			}
		}
	}
}

type link struct {
	index int32
	name  string
}

func (c *conn) links() ([]link, error) {
	var out []link
	err := c.do(syscall.RTM_GETLINK, syscall.NLM_F_DUMP, 0, nil, func(m syscall.NetlinkMessage) {
		idx := int32(binary.NativeEndian.Uint32(m.Data[4:]))
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			return
		}
		for _, a := range attrs {
			if a.Attr.Type == syscall.IFLA_IFNAME {
				name := strings.TrimRight(string(a.Value), "\x00")
				if strings.HasPrefix(name, prefix) {
					out = append(out, link{idx, name})
				}
			}
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out, err
}

func run(args []string) error {
	c, err := dial()
	if err != nil {
		return err
	}
	num := func(i int) (int, error) {
		if len(args) <= i {
			return 0, fmt.Errorf("missing argument %d", i)
		}
		return strconv.Atoi(args[i])
	}
	switch args[0] {
	case "add":
		n, err := num(1)
		if err != nil {
			return err
		}
		g, err := num(2)
		if err != nil {
			return err
		}
		kind := attr(iflaLinkInfo, attr(iflaInfoKind, []byte("dummy")))
		t0 := time.Now()
		for i := 0; i < n; i++ {
			a := append(attr(syscall.IFLA_IFNAME, append([]byte(fmt.Sprintf("%s%d", prefix, i)), 0)), attr(iflaGroup, u32(uint32(g)))...)
			a = append(a, kind...)
			if err := c.do(syscall.RTM_NEWLINK, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL, 0, a, nil); err != nil {
				return fmt.Errorf("create %d: %w", i, err)
			}
		}
		fmt.Printf("added %d in %.1f ms (%.3f ms/device)\n", n, ms(time.Since(t0)), ms(time.Since(t0))/float64(n))
	case "count":
		l, err := c.links()
		if err != nil {
			return err
		}
		fmt.Printf("count %d\n", len(l))
	case "delone":
		l, err := c.links()
		if err != nil {
			return err
		}
		d := make([]float64, len(l))
		t0 := time.Now()
		for i, k := range l {
			t := time.Now()
			if err := c.do(syscall.RTM_DELLINK, 0, k.index, nil, nil); err != nil {
				return fmt.Errorf("delete %s: %w", k.name, err)
			}
			d[i] = ms(time.Since(t))
		}
		total := ms(time.Since(t0))
		sort.Float64s(d)
		if len(d) == 0 {
			return fmt.Errorf("no %s* link", prefix)
		}
		fmt.Printf("delone n=%d total_ms=%.1f median_ms=%.2f p99_ms=%.2f max_ms=%.2f\n",
			len(d), total, d[len(d)/2], d[len(d)*99/100], d[len(d)-1])
	case "delgroup":
		g, err := num(1)
		if err != nil {
			return err
		}
		before, err := c.links()
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := c.do(syscall.RTM_DELLINK, 0, 0, attr(iflaGroup, u32(uint32(g))), nil); err != nil {
			return err
		}
		total := ms(time.Since(t0))
		after, err := c.links()
		if err != nil {
			return err
		}
		fmt.Printf("delgroup n=%d total_ms=%.1f\n", len(before)-len(after), total)
	default:
		return fmt.Errorf("unknown command %q", args[0])
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: nlbench add N GROUP | count | delone | delgroup GROUP")
		os.Exit(2)
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "nlbench:", err)
		os.Exit(1)
	}
}
