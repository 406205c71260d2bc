package advise

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// The levers a line offers, each one emulated as a cell that differs from
// the workload's own in that one change. Which knobs exist, their values
// now and what each may be set to come from the line's knob table
// (netdev/knob_lines.go) resolved for the machine; a candidate the machine
// cannot take (the emulated kernel refuses it) comes out not applicable,
// with the kernel's reason.

// knobTry is a value to try for a knob, given its value now.
type knobTry func(now knob.Value, m Machine) []string

var (
	tryOn     = func(now knob.Value, _ Machine) []string { return when(now.Int == 0, "1") }
	tryOff    = func(now knob.Value, _ Machine) []string { return when(now.Int != 0, "0") }
	tryToggle = func(now knob.Value, _ Machine) []string {
		if now.Int >= 1 {
			return []string{"0"}
		}
		return []string{"1"}
	}
)

func when(ok bool, vs ...string) []string {
	if ok {
		return vs
	}
	return nil
}

// knobTries are the runtime and boot knobs advise tries, with the values
// worth trying. Knobs that change no time (the warning cadence) or only
// bound the machine (user.max_net_namespaces, unless the workload hits it)
// are not levers.
var knobTries = []struct {
	name string
	try  knobTry
}{
	{knob.RCUExpedited, tryOn},
	{knob.RCUNormal, tryOff},
	{knob.RCUNormalAfterBoot, tryOff},
	{knob.FirstFQS, func(now knob.Value, _ Machine) []string {
		var vs []string
		if now.Int > 0 {
			vs = append(vs, "0")
		}
		if now.Int > 1 {
			vs = append(vs, "1")
		}
		return vs
	}},
	{knob.NextFQS, func(now knob.Value, _ Machine) []string { return when(now.Int > 1, "1") }},
	{knob.WakeFromGP, tryToggle},
	{knob.UseSoftirq, func(now knob.Value, _ Machine) []string {
		if now.Bool() {
			return []string{"0"}
		}
		return []string{"1"}
	}},
	{knob.Divisor, func(now knob.Value, _ Machine) []string { return when(now.Int != 0, "0") }},
	{knob.NoCBs, func(now knob.Value, _ Machine) []string { return when(!now.CPUs.All, "all") }},
	{knob.EnableLazy, tryOff},
}

// candidates lists the levers for o's machine and workload; those that
// cannot even be named on it (a knob the line lacks) are left out, those
// the emulated kernel refuses come back from bench as not applicable.
func candidates(o Options) (levers []Lever, na []Lever) {
	m, w := o.Machine, o.Workload
	p := netdev.Profiles[m.Profile]
	base := o.baseCell()
	now := resolveNow(m)
	add := func(l Lever, mod func(c *bench.Cell)) {
		l.cell = base
		mod(&l.cell)
		levers = append(levers, l)
	}
	// Knobs: runtime, then boot.
	for _, kind := range []knob.Kind{knob.Runtime, knob.Boot} {
		for _, t := range knobTries {
			d := knob.MustLookup(t.name)
			if d.Kind != kind {
				continue
			}
			if _, ok := p.LineKnob(d.Name); !ok || now == nil {
				continue
			}
			cur, ok := now.Value(d.Name)
			if !ok {
				continue
			}
			for _, v := range t.try(cur, m) {
				l := knobLever(d, v, cur.String())
				add(l, func(c *bench.Cell) { c.Params = setParam(c.Params, d.Name, v) })
			}
		}
	}
	// preempt= on a PREEMPT_DYNAMIC build: the other modes.
	if now != nil {
		if cur, ok := now.Value(knob.PreemptMode); ok {
			d := knob.MustLookup(knob.PreemptMode)
			for _, mode := range d.Choices {
				if mode == cur.Choice() {
					continue
				}
				l := knobLever(d, mode, cur.String())
				mode := mode
				add(l, func(c *bench.Cell) { c.Params = setParam(c.Params, knob.PreemptMode, mode) })
			}
		}
	}
	// Build: HZ.
	for _, hz := range []int{100, 250, 300, 1000} {
		if hz == m.HZ {
			continue
		}
		l := Lever{Kind: KindBuild, Setting: fmt.Sprintf("CONFIG_HZ=%d", hz),
			Apply: fmt.Sprintf("a kernel built with CONFIG_HZ_%d=y", hz),
			Cost:  hzCost(m.HZ, hz, m.CPUs)}
		add(l, func(c *bench.Cell) { c.HZ = hz })
	}
	// Build: the preemption model and its RCU.
	for _, b := range preemptBuilds(p, m) {
		add(b.lever, b.mod)
	}
	// Build: callback offloading where the build lacks it.
	if now != nil {
		if v, ok := now.Value(knob.ConfigNoCB); ok && !v.Bool() {
			l := Lever{Kind: KindBuild, Setting: "CONFIG_RCU_NOCB_CPU=y rcu_nocbs=all",
				Apply: "a kernel built with CONFIG_RCU_NOCB_CPU=y, booted with rcu_nocbs=all",
				Cost:  knob.MustLookup(knob.NoCBs).Cost}
			add(l, func(c *bench.Cell) {
				c.Params = setParam(setParam(c.Params, knob.ConfigNoCB, "1"), knob.NoCBs, "all")
			})
		}
	}
	// Each later kernel line, on the same machine with its own defaults.
	i := slices.Index(netdev.ProfileNames, m.Profile)
	for _, line := range netdev.ProfileNames[i+1:] {
		l := Lever{Kind: KindKernel, Setting: "line " + line,
			Apply: fmt.Sprintf("a %s kernel (the line's own wait loop and defaults)", line),
			Cost:  "a kernel upgrade: a reboot, and whatever else the release changes"}
		// An x86 7.x kernel has no none or voluntary: booted with
		// preempt=none it refuses the mode and runs its build's, lazy.
		lazy := netdev.Profiles[line].NoNoneVoluntary && (m.Preempt == "none" || m.Preempt == "voluntary")
		if lazy {
			l.Apply = fmt.Sprintf("a %s kernel (the line's own wait loop and defaults; it runs lazy preemption, having no %s)", line, m.Preempt)
		}
		line := line
		add(l, func(c *bench.Cell) {
			c.Profile, c.Strategy, c.RCU = line, bench.DefaultStrategy, ""
			if m.RCU == "tree-preempt" || m.RCU == "tree" {
				c.RCU = "" // the new line's default for the machine
			}
			c.Params = joinParams(paramsForLine(m.Params, line))
			if lazy {
				c.Preempt = "lazy"
				c.Params = dropParams(c.Params, knob.PreemptMode)
			}
		})
	}
	// The workload itself.
	if w.OneByOne {
		l := Lever{Kind: KindWorkload, Cost: "none in the kernel: the same work, one RTNL hold and one wait for all"}
		if w.Namespaces > 0 {
			l.Setting = "delete the namespaces all at once"
			l.Apply = "ip netns del for every namespace, then wait for the cleanup once (do not wait for each one's cleanup before deleting the next)"
		} else {
			l.Setting = "delete the devices in one batch"
			l.Apply = "one request for all: put them in a group (ip link set DEV group G) and ip link delete group G, or delete the namespace that holds them"
		}
		add(l, func(c *bench.Cell) { c.Batch = "batched" })
	}
	if w.Namespaces > 0 && !w.CNI && !w.Unshare {
		na = append(na, Lever{Kind: KindWorkload, Setting: "leave each pod's veth to its namespace's cleanup",
			NotApplicable: "the workload already leaves the veth to cleanup_net; --cni deletes it first, as a CNI plugin's DEL does"})
	}
	workloadLevers(w, add)
	return levers, na
}

// resolveNow is the machine's knobs as they are (nil when the machine
// cannot be resolved, which Run reports through the baseline cell).
func resolveNow(m Machine) *netdev.Knobs {
	p := netdev.Profiles[m.Profile]
	pre, err := sim.ParsePreempt(m.Preempt)
	if err != nil {
		return nil
	}
	c, err := p.Choose(m.RCU, m.CPUs, pre)
	if err != nil {
		return nil
	}
	as, err := knob.ParseAssignments(paramsForLine(m.Params, m.Profile))
	if err != nil {
		return nil
	}
	k, err := p.ResolveKnobs(m.HZ, m.CPUs, pre, c.Name, as, nil)
	if err != nil {
		return nil
	}
	return k
}

// knobLever is the lever of setting d to v (cur the value now).
func knobLever(d *knob.Def, v, cur string) Lever {
	l := Lever{Setting: d.Name + "=" + v, Cost: d.Cost, Current: cur, Value: v}
	if d.CostOff != "" && v == "0" {
		l.Cost = d.CostOff
	}
	switch d.Kind {
	case knob.Runtime:
		l.Kind, l.RuntimeSettable, l.Path = KindRuntime, true, d.Path
		if strings.HasPrefix(d.Path, "/proc/sys/") {
			l.Apply = "sysctl -w " + d.Name + "=" + v
		} else {
			l.Apply = "echo " + v + " > " + d.Path
		}
	default:
		l.Kind = KindBoot
		l.Apply = fmt.Sprintf("boot with %s=%s on the kernel command line (e.g. GRUB_CMDLINE_LINUX, then update-grub and reboot)", d.Name, v)
		if d.Name == knob.PreemptMode {
			l.Apply += "; or, with debugfs, echo " + v + " > " + d.Path + " at run time"
		}
	}
	return l
}

// hzCost is what another HZ costs in ticks.
func hzCost(from, to, cpus int) string {
	if to > from {
		return fmt.Sprintf("%d more timer interrupts a second on each busy CPU (%d CPUs: %d a second), CPU time and power; every jiffy-based wait gets shorter",
			to-from, cpus, (to-from)*cpus)
	}
	return fmt.Sprintf("%d fewer timer interrupts a second per busy CPU (saves CPU time and power), but every jiffy-based wait (grace-period scans, timers) gets longer", from-to)
}

type build struct {
	lever Lever
	mod   func(c *bench.Cell)
}

// preemptBuilds are the preemption-model builds of the line other than the
// machine's: PREEMPT_RT (lines 5.10 on), full preemption, and a build
// without preemptible RCU (none or voluntary) where the line offers one.
func preemptBuilds(p netdev.Profile, m Machine) []build {
	var out []build
	mk := func(setting, apply, cost, preempt, rcu string) {
		out = append(out, build{Lever{Kind: KindBuild, Setting: setting, Apply: apply, Cost: cost},
			func(c *bench.Cell) {
				c.Preempt, c.RCU = preempt, rcu
				c.Params = dropParams(c.Params, knob.PreemptMode, knob.UseSoftirq, knob.RCUNormal, knob.RCUNormalAfterBoot)
			}})
	}
	if m.Preempt != "rt" && p.ModernRCU {
		mk("CONFIG_PREEMPT_RT=y", "a PREEMPT_RT kernel (Debian: linux-image-rt-amd64)",
			"real-time latency at a throughput cost: threaded interrupts and softirqs, RCU's callbacks in kthreads, and rcu_normal after boot (no expedited grace periods)",
			"rt", "tree-preempt")
	}
	if m.Preempt != "full" && m.Preempt != "rt" {
		rcu := "tree-preempt"
		if !p.ModernRCU {
			rcu = "tree-preempt"
		}
		mk("CONFIG_PREEMPT=y", "a fully preemptible kernel (CONFIG_PREEMPT=y, or preempt=full on a PREEMPT_DYNAMIC one)",
			"more preemption points in kernel code (throughput); lower latency", "full", rcu)
	}
	if slices.ContainsFunc(p.RCUs, func(c netdev.RCUChoice) bool { return c.Name == "tree" }) && (m.RCU == "tree-preempt" || m.Preempt == "rt") && m.Preempt != "full" {
		pre := m.Preempt
		if pre == "rt" {
			pre = "none"
		}
		mk("CONFIG_PREEMPT_NONE=y (no PREEMPT_DYNAMIC)", "a kernel built with CONFIG_PREEMPT_NONE=y and without PREEMPT_DYNAMIC, whose RCU is not preemptible",
			"kernel code is not preempted (latency); the same throughput or better", pre, "tree")
	}
	return out
}

// paramsForLine keeps the knobs a line has.
func paramsForLine(params []string, line string) []string {
	p := netdev.Profiles[line]
	var out []string
	for _, w := range params {
		name, _, _ := strings.Cut(w, "=")
		d := knob.Lookup(name)
		if d == nil {
			continue
		}
		if _, ok := p.LineKnob(d.Name); ok {
			out = append(out, d.Name+w[len(name):])
		}
	}
	return out
}

func joinParams(l []string) string { return strings.Join(l, " ") }

// setParam sets NAME=VALUE in a cell's space-separated knobs.
func setParam(params, name, value string) string {
	return strings.TrimSpace(dropParams(params, name) + " " + name + "=" + value)
}

// dropParams removes knobs from a cell's knobs.
func dropParams(params string, names ...string) string {
	var out []string
	for _, w := range strings.Fields(params) {
		n, _, _ := strings.Cut(w, "=")
		if !slices.Contains(names, n) {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
