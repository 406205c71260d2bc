package emu

import (
	"context"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// TestAddCountsItsAddressPart: an add with addresses reports the part that
// set the devices up (addr_ns), after every device was created, within
// the add's own time, as the netlink backend does; an add without
// addresses reports none, and the devices' create latencies do not
// include their address part.
func TestAddCountsItsAddressPart(t *testing.T) {
	ctx := context.Background()
	tmpl, _ := ndst.ParseTemplate("ifb%d")
	plain := open(t, hostConfig(t, ""))
	p, err := plain.Add(ctx, ndst.AddRequest{Count: 20, Template: tmpl, Kind: "ifb"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Counters["addr_ns"]; ok {
		t.Errorf("an add without addresses counts addr_ns = %d", p.Counters["addr_ns"])
	}
	withAddrs := open(t, hostConfig(t, ""))
	a, err := withAddrs.Add(ctx, ndst.AddRequest{Count: 20, Template: tmpl, Kind: "ifb", Addrs: ndst.Addrs{Up: true, V4: 1, V6: 1}})
	if err != nil {
		t.Fatal(err)
	}
	an := a.Counters["addr_ns"]
	if an <= 0 || an >= *a.VirtualNS {
		t.Fatalf("addr_ns = %d with the add's %d virtual: want 0 < addr_ns < the add's time", an, *a.VirtualNS)
	}
	// The creates are the same with or without addresses to follow.
	if a.Latency.MedianNS != p.Latency.MedianNS {
		t.Errorf("create latency median %d with addresses, %d without: want the same (the address part follows every create)", a.Latency.MedianNS, p.Latency.MedianNS)
	}
	if d := *a.VirtualNS - an - *p.VirtualNS; d < -*p.VirtualNS/10 || d > *p.VirtualNS/10 {
		t.Errorf("the add with addresses less its address part is %d virtual, the add without %d: want the same within a tenth",
			*a.VirtualNS-an, *p.VirtualNS)
	}
}
