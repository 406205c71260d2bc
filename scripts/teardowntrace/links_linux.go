package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// The links subcommand is a workload for traces on a machine without
// iproute2 (the VM rig's guest): it creates dummy links and deletes them
// with one sendmsg(2) per RTM_NEWLINK or RTM_DELLINK, on the main thread, so
// that the pid the run subcommand writes into the trace is the task whose
// sendmsg calls the analysis counts.
//
//	teardowntrace links -add N [-prefix P] [-group G]   create P0 .. P(N-1), kind dummy, in group G
//	teardowntrace links -del N [-prefix P]              delete them one by one (one RTM_DELLINK each)
//	teardowntrace links -del-group G                    delete group G in one RTM_DELLINK

func init() {
	// Keep the main goroutine on the main thread: its TID is the pid.
	runtime.LockOSThread()
}

func linksMain(args []string) int {
	fs := flag.NewFlagSet("links", flag.ContinueOnError)
	add := fs.Int("add", 0, "create this many dummy links")
	del := fs.Int("del", 0, "delete this many links one by one")
	delGroup := fs.Int("del-group", 0, "delete every link of this group in one request")
	prefix := fs.String("prefix", "tdt", "link name prefix")
	group := fs.Int("group", 7, "interface group of the links -add creates")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *add < 0 || *del < 0 || *delGroup < 0 || countSet(*add, *del, *delGroup) != 1 ||
		len(*prefix) > 9 || *group <= 0 {
		fmt.Fprintln(os.Stderr, "usage: teardowntrace links -add N [-prefix P] [-group G] | -del N [-prefix P] | -del-group G (one of them; N up to 100000, P up to 9 bytes)")
		return 2
	}
	s, err := newRtnl()
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace links:", err)
		return 1
	}
	defer syscall.Close(s)
	switch {
	case *add > 0:
		for i := range *add {
			if err := request(s, syscall.RTM_NEWLINK, syscall.NLM_F_CREATE|syscall.NLM_F_EXCL, 0, fmt.Sprintf("%s%d", *prefix, i), *group, "dummy"); err != nil {
				fmt.Fprintf(os.Stderr, "teardowntrace links: add %s%d: %v\n", *prefix, i, err)
				return 1
			}
		}
	case *del > 0:
		for i := range *del {
			if err := request(s, syscall.RTM_DELLINK, 0, 0, fmt.Sprintf("%s%d", *prefix, i), 0, ""); err != nil {
				fmt.Fprintf(os.Stderr, "teardowntrace links: del %s%d: %v\n", *prefix, i, err)
				return 1
			}
		}
	default:
		if err := request(s, syscall.RTM_DELLINK, 0, 0, "", *delGroup, ""); err != nil {
			fmt.Fprintf(os.Stderr, "teardowntrace links: del group %d: %v\n", *delGroup, err)
			return 1
		}
	}
	return 0
}

func newRtnl() (int, error) {
	s, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return -1, fmt.Errorf("netlink socket: %w", err)
	}
	if err := syscall.Bind(s, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		syscall.Close(s)
		return -1, fmt.Errorf("netlink bind: %w", err)
	}
	return s, nil
}

var seq uint32

// request sends one link message with sendmsg(2) and waits for its ACK.
func request(s int, typ, flags uint16, index int32, name string, group int, kind string) error {
	var b []byte
	put16 := func(v uint16) { b = binary.NativeEndian.AppendUint16(b, v) }
	put32 := func(v uint32) { b = binary.NativeEndian.AppendUint32(b, v) }
	attr := func(t uint16, val []byte) {
		put16(uint16(4 + len(val)))
		put16(t)
		b = append(b, val...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
	}
	seq++
	b = make([]byte, 0, 128)
	put32(0) // length, set below
	put16(typ)
	put16(flags | syscall.NLM_F_REQUEST | syscall.NLM_F_ACK)
	put32(seq)
	put32(0)
	// ifinfomsg: family, pad, type, index, flags, change
	b = append(b, syscall.AF_UNSPEC, 0)
	put16(0)
	put32(uint32(index))
	put32(0)
	put32(0)
	if name != "" {
		attr(syscall.IFLA_IFNAME, append([]byte(name), 0))
	}
	if group > 0 {
		g := binary.NativeEndian.AppendUint32(nil, uint32(group))
		attr(27, g) // IFLA_GROUP
	}
	if kind != "" {
		var info []byte
		k := append([]byte(kind), 0)
		info = binary.NativeEndian.AppendUint16(info, uint16(4+len(k)))
		info = binary.NativeEndian.AppendUint16(info, 1) // IFLA_INFO_KIND
		info = append(info, k...)
		for len(info)%4 != 0 {
			info = append(info, 0)
		}
		attr(syscall.IFLA_LINKINFO, info)
	}
	binary.NativeEndian.PutUint32(b[0:4], uint32(len(b)))
	if err := syscall.Sendmsg(s, b, nil, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}, 0); err != nil {
		return fmt.Errorf("sendmsg: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := syscall.Recvfrom(s, buf, 0)
		if err != nil {
			return fmt.Errorf("recv: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != syscall.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return errors.New("short netlink error message")
			}
			if e := int32(binary.NativeEndian.Uint32(m.Data[0:4])); e != 0 {
				return syscall.Errno(-e)
			}
			return nil
		}
	}
}

func countSet(v ...int) int {
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}
