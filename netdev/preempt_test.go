package netdev

import (
	"strings"
	"testing"

	"github.com/ndst-project/ndst/sim"
)

// The preemption models each line's x86 builds have, and how a host's
// model and a run without --preempt map onto them.
func TestPreemptModelsByLine(t *testing.T) {
	for _, tc := range []struct {
		line          string
		lazy, none    bool   // --preempt lazy, none accepted
		def, hostLazy string // the default model; a lazy host's model
	}{
		{"6.12", false, true, "none", "full"},
		{"6.18", true, true, "none", "lazy"},
		{"7.2", true, false, "lazy", "lazy"},
	} {
		p := Profiles[tc.line]
		if err := p.checkPreempt(sim.PreemptLazy); (err == nil) != tc.lazy {
			t.Errorf("%s: --preempt lazy: %v", tc.line, err)
		}
		for _, pre := range []sim.Preempt{sim.PreemptNone, sim.PreemptVoluntary} {
			if err := p.checkPreempt(pre); (err == nil) != tc.none {
				t.Errorf("%s: --preempt %s: %v", tc.line, pre, err)
			}
		}
		if def, note := p.DefaultPreempt(); def != tc.def || (note == "") != (def == "none") {
			t.Errorf("%s: DefaultPreempt() = %q, %q; want %q", tc.line, def, note, tc.def)
		}
		got, note := p.HostPreempt("lazy")
		if got != tc.hostLazy || (note != "") != (got != "lazy") {
			t.Errorf("%s: HostPreempt(lazy) = %q, %q; want %q", tc.line, got, note, tc.hostLazy)
		}
		if got, note := p.HostPreempt(""); got != tc.def || !strings.Contains(note, "unknown") {
			t.Errorf("%s: HostPreempt(\"\") = %q, %q", tc.line, got, note)
		}
	}
	// RT: 6.1's build is not dynamic, Debian 6.12's boots lazy, 7.2's full.
	for line, want := range map[string]bool{"6.1": false, "6.12": true, "6.18": false, "7.2": false} {
		var c sim.Config
		c.Preempt = sim.PreemptRT
		Profiles[line].SimConfig(&c)
		if c.RTLazy != want {
			t.Errorf("%s --preempt rt: RTLazy = %v, want %v", line, c.RTLazy, want)
		}
	}
}
