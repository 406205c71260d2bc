package knob

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want: the value printed back, or "error: ..."
	}{
		{"rcutree.blimit=10", "rcutree.blimit=10"},
		{"rcutree.blimit=0x10", "rcutree.blimit=16"},
		{"/sys/module/rcutree/parameters/blimit=20", "rcutree.blimit=20"},
		{"rcutree.use_softirq=n", "rcutree.use_softirq=0"},
		{"rcutree.use_softirq=Y", "rcutree.use_softirq=1"},
		{"rcu_nocbs=all", "rcu_nocbs=all"},
		{"rcu_nocbs=3,0-1", "rcu_nocbs=0-1,3"},
		{"rcu_nocbs=0-7:2/4", "rcu_nocbs=0-1,4-5"},
		{"rcu_nocbs=none", "rcu_nocbs=none"},
		{"/proc/sys/net/core/netdev_unregister_timeout_secs=7", "net.core.netdev_unregister_timeout_secs=7"},
		{"/sys/kernel/rcu_expedited=1", "rcupdate.rcu_expedited=1"},
		{"preempt=voluntary", "preempt=voluntary"},
		{"preempt=eager", "error: not one of none, voluntary, full, lazy"},
		{"rcutree.blimit=-1", "error: out of range"},
		{"rcutree.blimit=99999999999999999999", "error: out of range"},
		{"rcutree.blimit=1.5", "error: not an integer"},
		{"rcu_nocbs=a-b", "error: not a CPU number"},
		{"rcu_nocbs=5-2", "error: runs backwards"},
		{"rcu_nocbs=9000", "error: beyond the largest CPU number"},
		{"rcu_nocbs=0-7:5/4", "error: want 0 < used <= group"},
		{"net.core.netdev_unregister_timeout_secs=3601", "error: want 1..3600"},
		{"nosuch=1", `error: unknown knob "nosuch"`},
		{"jiffies_till_first_fqs=1", "error: did you mean rcutree.jiffies_till_first_fqs"},
		{"=1", "error: want NAME=VALUE"},
		{"rcutree.blimit", "error: want NAME=VALUE"},
	} {
		a, err := ParseAssignment(tc.in)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
			if _, ok := err.(*Error); !ok {
				t.Errorf("ParseAssignment(%q) error %T, want *Error", tc.in, err)
			}
		} else {
			got = a.String()
		}
		if want, ok := strings.CutPrefix(tc.want, "error: "); ok {
			if !strings.HasPrefix(got, "error: ") || !strings.Contains(got, want) {
				t.Errorf("ParseAssignment(%q) = %q, want an error containing %q", tc.in, got, want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("ParseAssignment(%q) = %q, want %q", tc.in, got, tc.want)
		}
		// What prints back parses back to the same value.
		b, err := ParseAssignment(got)
		if err != nil || !b.Value.Equal(a.Value) {
			t.Errorf("ParseAssignment(%q) (printed back) = %v, %v", got, b, err)
		}
	}
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Catalog {
		for _, n := range append([]string{d.Name, d.Path}, d.Aliases...) {
			if n == "" {
				continue
			}
			if seen[n] {
				t.Errorf("%s is named twice in the catalogue", n)
			}
			seen[n] = true
			if Lookup(n) != d {
				t.Errorf("Lookup(%q) is not %s", n, d.Name)
			}
		}
		if d.What == "" || d.Cost == "" {
			t.Errorf("%s: says neither what it does nor what it costs", d.Name)
		}
		if d.Kind == Runtime && d.Path == "" {
			t.Errorf("%s: a runtime knob without a file to write", d.Name)
		}
	}
}

func TestCPUMask(t *testing.T) {
	s, _ := parseCPUList("1,3")
	m, bad := s.Mask(2)
	if !m[1] || m[0] || bad != 3 {
		t.Errorf("Mask(2) of 1,3 = %v, %d", m, bad)
	}
}
