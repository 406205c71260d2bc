package main

import (
	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// addAddrFlags gives a command that creates devices the flags that set
// them up with addresses (ndst.Addrs).
func addAddrFlags(cmd *cobra.Command, a *ndst.Addrs) {
	f := cmd.Flags()
	f.IntVar(&a.V4, "addr4", 0, "set every new device up with K IPv4 addresses (10.H.L.1-K/24, H.L from its ifindex), as ip addr add does")
	f.IntVar(&a.V6, "addr6", 0, "set every new device up with K IPv6 addresses (2001:db8:H:L::1-K/64)")
	f.BoolVar(&a.Forwarding6, "ipv6-forwarding", false, "set net.ipv6.conf.DEV.forwarding=1 on every new device before its addresses (each prefix then has a subnet-router anycast address)")
	f.BoolVar(&a.Up, "up", false, "set every new device up (implied by --addr4, --addr6 and --ipv6-forwarding)")
}

// addKind is the link kind of an add: --kind for the real backends, and on
// the emulated kernel only when given (dummy or ifb; the default there is
// the 2009 module's dummy).
func (g *globalOptions) addKind() string {
	if g.backend == "sim" && !g.kindExplicit {
		return ""
	}
	return g.kind
}
