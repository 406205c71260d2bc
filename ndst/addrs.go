package ndst

import (
	"fmt"
	"net/netip"
)

// Addrs is how every new device of an add is set up beyond its
// registration: up (ip link set DEV up), with V4 IPv4 and V6 IPv6
// addresses (ip addr add), and with Forwarding6 first the IPv6 forwarding
// sysctl of the device (net.ipv6.conf.DEV.forwarding=1, which gives each
// prefix its subnet-router anycast address). The zero value is a down
// device without addresses, as ndst makes by default.
type Addrs struct {
	Up          bool `json:"up,omitempty"`
	V4          int  `json:"addr4,omitempty"`
	V6          int  `json:"addr6,omitempty"`
	Forwarding6 bool `json:"ipv6_forwarding,omitempty"`
}

// MaxAddrs bounds the addresses of each family on one device: each device's
// addresses share one prefix, a /24 and a /64.
const MaxAddrs = 254

// IsZero reports whether a is a down device without addresses.
func (a Addrs) IsZero() bool { return a == Addrs{} }

// Normalize sets Up when anything needs it and checks the bounds.
func (a *Addrs) Normalize() error {
	if a.V4 < 0 || a.V4 > MaxAddrs {
		return Usagef("--addr4 %d: want 0..%d IPv4 addresses a device (they share one /24)", a.V4, MaxAddrs)
	}
	if a.V6 < 0 || a.V6 > MaxAddrs {
		return Usagef("--addr6 %d: want 0..%d IPv6 addresses a device (they share one /64)", a.V6, MaxAddrs)
	}
	if a.V4 > 0 || a.V6 > 0 || a.Forwarding6 {
		a.Up = true
	}
	return nil
}

// String describes a for progress lines and results, e.g. "up, 2 IPv6
// addresses, IPv6 forwarding".
func (a Addrs) String() string {
	if !a.Up {
		return "down, no addresses"
	}
	s := "up"
	if a.V4 > 0 {
		s += fmt.Sprintf(", %d IPv4 address%s", a.V4, es(a.V4))
	}
	if a.V6 > 0 {
		s += fmt.Sprintf(", %d IPv6 address%s", a.V6, es(a.V6))
	}
	if a.Forwarding6 {
		s += ", IPv6 forwarding"
	}
	return s
}

func es(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

// Addr4 is the k-th (from 0) IPv4 address of the device with ifindex
// ifindex: 10.H.L.(k+1)/24, H and L the low 16 bits of the ifindex, so each
// device of a namespace has a /24 of its own (up to ifindex 65535; above,
// prefixes repeat on different devices, which the kernel allows).
func Addr4(ifindex, k int) netip.Prefix {
	a := netip.AddrFrom4([4]byte{10, byte(ifindex >> 8), byte(ifindex), byte(k + 1)})
	return netip.PrefixFrom(a, 24)
}

// Addr6 is the k-th IPv6 address of the device: 2001:db8:H:L::(k+1)/64 in
// the documentation prefix, H:L the ifindex.
func Addr6(ifindex, k int) netip.Prefix {
	var b [16]byte
	b[0], b[1], b[2], b[3] = 0x20, 0x01, 0x0d, 0xb8
	b[4], b[5] = byte(ifindex>>24), byte(ifindex>>16)
	b[6], b[7] = byte(ifindex>>8), byte(ifindex)
	b[14], b[15] = byte((k+1)>>8), byte(k+1)
	return netip.PrefixFrom(netip.AddrFrom16(b), 64)
}
