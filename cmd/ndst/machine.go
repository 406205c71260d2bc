package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/hostknob"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/netdev"
	"github.com/spf13/cobra"
)

// --machine host (and --profile auto, which implies it) runs the emulated
// kernel as this host or as the --costs table's host: its kernel line, HZ,
// CPU count, preemption model, RCU implementation and kernel knobs, each
// taken from the table's host section when a table is given, else read from
// the running kernel. A flag given on the command line wins over what the
// host says. Every setting says where it came from (machineSettings), and
// the results print it.

// setting is one machine setting and where it came from.
type setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	From  string `json:"from"`
}

// hostMachine is what the host (or the table's host) says about itself.
type hostMachine struct {
	profile, rcu, preempt string
	hz, cpus              int
	params                []string
	from                  map[string]string
	notes                 []string
}

// machineFromTable reads the machine of a calibrated table's host.
func machineFromTable(t *costs.Table, path string) (hostMachine, error) {
	h := t.Host
	if h == nil || h.HZ == 0 || h.CPUs == 0 {
		return hostMachine{}, ndst.Usagef("--machine host: cost table %s has no host section with HZ and CPUs (write one with 'ndst calibrate -o FILE', or drop --costs to read this host)", path)
	}
	src := "the cost table " + path
	m := hostMachine{hz: h.HZ, cpus: h.CPUs, preempt: h.Preempt, rcu: h.RCU, from: map[string]string{}}
	m.profile = h.Profile
	m.from["profile"] = src + " (calibrated on kernel " + orDash(h.Kernel) + ")"
	if m.profile == "" {
		line, why, err := netdev.ProfileForRelease(h.Kernel)
		if err != nil {
			return m, ndst.Usagef("--machine host: cost table %s: %v", path, err)
		}
		m.profile, m.from["profile"] = line, why+", the cost table's kernel"
	}
	for _, k := range []string{"hz", "cpus", "preempt", "rcu"} {
		m.from[k] = src
	}
	if pre, note := netdev.Profiles[m.profile].HostPreempt(m.preempt); note != "" {
		if m.preempt == "" {
			note = "recorded none; " + pre + " assumed"
		}
		m.preempt, m.from["preempt"] = pre, src+" ("+note+")"
	}
	hc := *h
	hc.Profile = m.profile
	m.params, _ = calibrate.HostParams(&hc)
	m.from["knobs"] = src
	if note := calibrate.HostKnobNote(&costs.Table{Host: &hc}); note != "" {
		m.notes = append(m.notes, note)
	}
	return m, nil
}

// machineFromKernel reads the running kernel.
func machineFromKernel() (hostMachine, error) {
	f := nlbackend.ProbeHost()
	m := hostMachine{hz: f.HZ, cpus: f.CPUs, preempt: f.Preempt, from: map[string]string{}}
	if f.Kernel == "" {
		return m, ndst.Usagef("--machine host: the running kernel's release cannot be read; give --profile, --hz, --cpus and --preempt")
	}
	line, why, err := netdev.ProfileForRelease(f.Kernel)
	if err != nil {
		return m, ndst.Usagef("--machine host: %v", err)
	}
	m.profile, m.from["profile"] = line, why+", the running kernel"
	m.from["hz"] = orDash(f.HZSource)
	if f.HZ == 0 {
		m.hz, m.from["hz"] = 250, "not readable (no kernel config); 250 assumed"
	}
	m.from["cpus"] = "the online CPUs of this machine"
	switch pre, note := netdev.Profiles[line].HostPreempt(m.preempt); {
	case m.preempt == "":
		m.preempt, m.from["preempt"] = pre, "not readable; "+pre+" assumed"
	case note != "":
		m.preempt, m.from["preempt"] = pre, f.PreemptSource+" ("+note+")"
	default:
		m.from["preempt"] = f.PreemptSource
	}
	p := netdev.Profiles[line]
	want := "tree"
	if f.PreemptRCU || m.preempt == "full" || m.preempt == "rt" || m.preempt == "lazy" {
		want = "tree-preempt"
	}
	if slices.ContainsFunc(p.RCUs, func(c netdev.RCUChoice) bool { return c.Name == want }) {
		m.rcu = want
		m.from["rcu"] = "CONFIG_PREEMPT_RCU of the running kernel's config"
	}
	var knobs []costs.HostKnob
	for _, r := range hostknob.Read() {
		knobs = append(knobs, costs.HostKnob{Name: r.Name, Value: r.Value, Source: r.Source, Missing: r.Missing})
	}
	m.params, _ = calibrate.HostParams(&costs.Host{Profile: line, HZ: m.hz, CPUs: m.cpus, Preempt: m.preempt, RCU: m.rcu, Knobs: knobs})
	m.from["knobs"] = "the running kernel (sysfs, /proc/sys, /proc/cmdline, its config)"
	return m, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// applyMachine fills the emulated machine from the host when --machine
// host or --profile auto is given, leaving the flags the command line set.
func (g *globalOptions) applyMachine(cmd *cobra.Command) error {
	switch g.machine {
	case "", "flags":
		if g.profile != "auto" {
			return nil
		}
	case "host":
	default:
		return ndst.Usagef("--machine %q: want host (this host, or the --costs table's host) or flags (the emulated-kernel flags as given)", g.machine)
	}
	if g.machine == "flags" {
		return nil // --profile auto alone chooses only the line (emu.AutoProfile)
	}
	var m hostMachine
	var err error
	if g.costs != "" {
		t, lerr := costs.Load(g.costs)
		if lerr != nil {
			return ndst.Usagef("--costs: %v", lerr)
		}
		m, err = machineFromTable(t, g.costs)
	} else {
		m, err = machineFromKernel()
	}
	if err != nil {
		return err
	}
	changed := func(n string) bool { f := cmd.Flags().Lookup(n); return f != nil && f.Changed }
	var out []setting
	set := func(flag string, dst *string, v, from string) {
		if changed(flag) && (flag != "profile" || *dst != "auto") {
			out = append(out, setting{flag, *dst, "the command line"})
			return
		}
		*dst = v
		out = append(out, setting{flag, v, from})
	}
	setInt := func(flag string, dst *int, v int, from string) {
		if changed(flag) {
			out = append(out, setting{flag, fmt.Sprint(*dst), "the command line"})
			return
		}
		*dst = v
		out = append(out, setting{flag, fmt.Sprint(v), from})
	}
	set("profile", &g.profile, m.profile, m.from["profile"])
	setInt("hz", &g.hz, m.hz, m.from["hz"])
	setInt("cpus", &g.cpus, m.cpus, m.from["cpus"])
	set("preempt", &g.preempt, m.preempt, m.from["preempt"])
	if m.rcu != "" {
		set("rcu", &g.rcu, m.rcu, m.from["rcu"])
	}
	// The command line's --param wins over the host's value of a knob
	// (emu.Config.HostParams).
	g.hostParams, g.hostParamsFrom = m.params, m.from["knobs"]
	kv := "all at the line's defaults"
	if len(m.params) > 0 {
		kv = strings.Join(m.params, " ")
	}
	out = append(out, setting{"knobs", kv, m.from["knobs"]})
	g.machineSettings = out
	g.machineNotes = m.notes
	return nil
}

// tableMachineNote says when a calibrated --costs table runs on another
// machine than its host's: the flags' and their defaults' (the 2009
// machine), because --machine host was not given. The table's costs are
// then those of its host's CPU on another kernel line, HZ or CPU count.
func (g *globalOptions) tableMachineNote(t *costs.Table) string {
	h := t.Host
	if len(g.machineSettings) > 0 || g.profile == "auto" || h == nil || h.HZ == 0 || h.CPUs == 0 {
		return ""
	}
	line := h.Profile
	if line == "" {
		line, _, _ = netdev.ProfileForRelease(h.Kernel)
	}
	if line == g.profile && h.HZ == g.hz && h.CPUs == g.cpus {
		return ""
	}
	cpus := func(n int) string {
		if n == 1 {
			return "1 CPU"
		}
		return fmt.Sprint(n, " CPUs")
	}
	return fmt.Sprintf("the cost table was calibrated on kernel %s (line %s, HZ %d, %s); this run emulates line %s, HZ %d, %s, from the flags and their defaults: --machine host runs the table's machine",
		orDash(h.Kernel), orDash(line), h.HZ, cpus(h.CPUs), g.profile, g.hz, cpus(g.cpus))
}

// machineNote is the one line that says what came from where.
func (g *globalOptions) machineNote() string {
	if len(g.machineSettings) == 0 {
		return ""
	}
	var parts []string
	for _, s := range g.machineSettings {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", s.Name, s.Value, s.From))
	}
	return "machine host: " + strings.Join(parts, "; ")
}

// benchMachine makes bench's emulated cells this host's machine where
// --machine host (or --profile auto) asked for it, or where the bench has
// netlink cells and no emulation flag was given: real rows of this host
// are then beside emulated rows of this host, not of the 2009 machine.
// It returns a note for the report ("" when nothing changed).
func (g *globalOptions) benchMachine(cmd *cobra.Command, o *benchOptions) (string, error) {
	changed := func(n string) bool { f := cmd.Flags().Lookup(n); return f != nil && f.Changed }
	if len(g.machineSettings) == 0 && g.machine == "" && slices.Contains(o.backends, "netlink") && slices.Contains(o.backends, "sim") &&
		!slices.ContainsFunc([]string{"profile", "hz", "cpus", "preempt", "rcu", "costs"}, changed) {
		g.machine = "host"
		if err := g.applyMachine(cmd); err != nil {
			return "", err
		}
	}
	if len(g.machineSettings) == 0 {
		return "", nil
	}
	for _, d := range []struct {
		flag string
		list *[]string
		v    string
	}{{"profile", &o.profiles, g.profile}, {"hz", &o.hz, fmt.Sprint(g.hz)}, {"cpus", &o.cpus, fmt.Sprint(g.cpus)}, {"preempt", &o.preempts, g.preempt}} {
		if !changed(d.flag) {
			*d.list = []string{d.v}
		}
	}
	return g.machineNote(), nil
}

// mergeParamWords is a host's knobs with the command line's over them.
func mergeParamWords(host, params []string) []string {
	named := map[string]bool{}
	for _, p := range params {
		name, _, _ := strings.Cut(p, "=")
		named[name] = true
	}
	var out []string
	for _, p := range host {
		if name, _, _ := strings.Cut(p, "="); !named[name] {
			out = append(out, p)
		}
	}
	return append(out, params...)
}
