package netdev

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/rcu"
	"github.com/ndst-project/ndst/sim"
)

// Knobs are a line's knobs resolved for one machine: each one's value
// during the run, and which of them the command line (or a host) gave.
// Only given knobs are applied to the mechanisms: a knob left at its
// default leaves the line exactly as it is, and a knob given its default
// value must change nothing (the property tests check both).
type Knobs struct {
	line  string
	list  []*LineKnob
	vals  map[string]knob.Value
	defs  map[string]knob.Value // each knob's default on the machine
	given map[string]string     // name -> where the value came from
	// hz and preempt are the machine after CONFIG_HZ and preempt=;
	// rtLazy is a dynamic PREEMPT_RT kernel's preempt= (lazy or full).
	hz, cpus int
	preempt  sim.Preempt
	rtLazy   bool
}

// resolveOrder puts the knobs a default or check depends on first.
var resolveOrder = []string{
	knob.ConfigHZ, knob.ConfigNoCB, knob.ConfigLazy, knob.PreemptMode,
	knob.RCUNormalAfterBoot, knob.RCUNormal, knob.RCUExpedited,
	knob.FirstFQS, knob.NextFQS, knob.SchedQS,
}

func rank(name string) int {
	if i := slices.Index(resolveOrder, name); i >= 0 {
		return i
	}
	return len(resolveOrder) + slices.IndexFunc(knob.Catalog, func(d *knob.Def) bool { return d.Name == name })
}

// LineKnob returns the line's entry for a knob, if the line has it.
func (p Profile) LineKnob(name string) (*LineKnob, bool) {
	for i := range p.Knobs {
		if p.Knobs[i].Def.Name == name {
			return &p.Knobs[i], true
		}
	}
	return nil, false
}

// KnobIntro says where a knob first appears among the modelled lines: the
// first line that has it and that line's entry ("" when none has it).
func KnobIntro(name string) (string, *LineKnob) {
	for _, l := range ProfileNames {
		if k, ok := Profiles[l].LineKnob(name); ok {
			return l, k
		}
	}
	return "", nil
}

// lacks explains a knob the line does not have.
func (p Profile) lacks(d *knob.Def) error {
	line, k := KnobIntro(d.Name)
	if k == nil {
		return fmt.Errorf("--param %s: no modelled kernel line has it", d.Name)
	}
	since := k.Since
	if k.Commit != "" {
		since += ", " + k.Commit
	}
	return fmt.Errorf("--param %s: kernel %s lacks it; it came in %s (the first modelled line with it is %s)", d.Name, p.Name, since, line)
}

// ResolveKnobs resolves every knob of the line for the machine, with the
// given assignments (from[i] = where given[i] came from, e.g. "--param"). HZ,
// CPUs and preempt are the machine's as booted (before preempt=), rcuName
// the RCU implementation the machine runs; CONFIG_HZ and preempt= may
// change HZ and the preemption model (Knobs.HZ, Knobs.Preempt). Errors are the
// command line's: a knob the line lacks (with the release it came in), a
// value the machine or build refuses.
func (p Profile) ResolveKnobs(hz, cpus int, preempt sim.Preempt, rcuName string, given []knob.Assignment, from []string) (*Knobs, error) {
	k := &Knobs{line: p.Name, vals: map[string]knob.Value{}, defs: map[string]knob.Value{}, given: map[string]string{}, hz: hz, cpus: cpus, preempt: preempt}
	byName := map[string]knob.Assignment{}
	fromOf := map[string]string{}
	for i, a := range given {
		fromOf[a.Def.Name] = "--param"
		if i < len(from) {
			fromOf[a.Def.Name] = from[i]
		}
		e, ok := p.LineKnob(a.Def.Name)
		if !ok {
			return nil, p.lacks(a.Def)
		}
		if e.Max != 0 && a.Value.Int > e.Max && a.Def.Type == knob.Int {
			return nil, fmt.Errorf("%s=%s: out of range on kernel %s; want %d..%d", a.Def.Name, a.Value, p.Name, a.Def.Min, e.Max)
		}
		byName[a.Def.Name] = a
	}
	for i := range p.Knobs {
		k.list = append(k.list, &p.Knobs[i])
	}
	slices.SortStableFunc(k.list, func(a, b *LineKnob) int { return rank(a.Def.Name) - rank(b.Def.Name) })
	c := &KnobContext{Line: p.Name, HZ: hz, CPUs: cpus, Preempt: preempt, RCU: rcuName, vals: k.vals}
	for _, e := range k.list {
		name := e.Def.Name
		a, isGiven := byName[name]
		if e.Applies != nil && !e.Applies(c) {
			if isGiven {
				if err := e.Check(c, a.Value); err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("%s does not apply to this machine", a.Given)
			}
			continue
		}
		v := e.Default(c)
		k.defs[name] = v
		if isGiven {
			v = a.Value
			if e.Check != nil {
				if err := e.Check(c, v); err != nil {
					return nil, err
				}
			}
			k.given[name] = fromOf[name]
		}
		k.vals[name] = v
		// The machine follows the build and boot knobs at once, so that
		// the defaults after them see it.
		switch name {
		case knob.ConfigHZ:
			c.HZ, k.hz = int(v.Int), int(v.Int)
		case knob.PreemptMode:
			switch {
			case c.Preempt == sim.PreemptRT:
				// A dynamic RT build stays RT: preempt= chooses its
				// lazy mode (ApplySim).
				k.rtLazy = v.Choice() == "lazy"
			case isGiven:
				pre, _ := sim.ParsePreempt(v.Choice())
				c.Preempt, k.preempt = pre, pre
			}
		}
	}
	return k, nil
}

// Line returns the line the knobs were resolved for.
func (k *Knobs) Line() string { return k.line }

// HZ and Preempt are the machine after CONFIG_HZ and preempt=.
func (k *Knobs) HZ() int              { return k.hz }
func (k *Knobs) Preempt() sim.Preempt { return k.preempt }

// Value returns a knob's value during the run (false when the line lacks
// it).
func (k *Knobs) Value(name string) (knob.Value, bool) {
	v, ok := k.vals[name]
	return v, ok
}

// Given reports whether a knob was given (and from where), rather than
// left at the line's default.
func (k *Knobs) Given(name string) (string, bool) {
	from, ok := k.given[name]
	return from, ok
}

// KnobState is one knob of a run, as results print it.
type KnobState struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Default string `json:"default"`
	From    string `json:"from"`
}

// List returns every knob of the line with its value, default and source,
// in catalogue order.
func (k *Knobs) List() []KnobState {
	var out []KnobState
	for _, d := range knob.Catalog {
		v, ok := k.vals[d.Name]
		if !ok {
			continue
		}
		s := KnobState{Name: d.Name, Value: v.String(), From: "default"}
		if from, ok := k.given[d.Name]; ok {
			s.From = from
		}
		out = append(out, s)
	}
	return out
}

// GivenList is the given knobs as NAME=VALUE, in catalogue order.
func (k *Knobs) GivenList() []string {
	var out []string
	for _, d := range knob.Catalog {
		if _, ok := k.given[d.Name]; ok {
			out = append(out, d.Name+"="+k.vals[d.Name].String())
		}
	}
	return out
}

// AwayFromDefault lists the given knobs whose value is not the line's
// default, as NAME=VALUE (from WHERE; default D).
func (k *Knobs) AwayFromDefault() []string {
	var out []string
	for _, d := range knob.Catalog {
		from, ok := k.given[d.Name]
		if !ok || k.vals[d.Name].Equal(k.defs[d.Name]) {
			continue
		}
		out = append(out, fmt.Sprintf("%s=%s (%s; the line's default %s)", d.Name, k.vals[d.Name], from, k.defs[d.Name]))
	}
	return out
}

// on is whether a given knob turns its mechanism on, as the line tests it.
func (k *Knobs) on(name string) bool {
	v := k.vals[name]
	for _, e := range k.list {
		if e.Def.Name == name && e.On != nil {
			return e.On(v)
		}
	}
	return v.Int != 0
}

// ApplyRCU applies the given RCU knobs to the RCU model's configuration of
// a line (from Profile.RCUConfig).
func (k *Knobs) ApplyRCU(cfg *rcu.Config) {
	hz := k.hz
	if _, ok := k.given[knob.RCUExpedited]; ok {
		cfg.ExpediteAll = k.on(knob.RCUExpedited)
	}
	_, n1 := k.given[knob.RCUNormal]
	_, n2 := k.given[knob.RCUNormalAfterBoot]
	if n1 || n2 {
		cfg.NormalOnly = k.vals[knob.RCUNormal].Int != 0
	}
	if _, ok := k.given[knob.FirstFQS]; ok {
		cfg.FQSFirst = int(clampFQS(k.vals[knob.FirstFQS].Int, hz, false))
		cfg.FQSFirstZero = cfg.FQSFirst == 0
	}
	if _, ok := k.given[knob.NextFQS]; ok {
		cfg.FQSNext = int(clampFQS(k.vals[knob.NextFQS].Int, hz, true))
	}
	if _, ok := k.given[knob.SchedQS]; ok {
		cfg.SchedQS = int(min(k.vals[knob.SchedQS].Int, 1<<40))
	}
	if _, ok := k.given[knob.Blimit]; ok {
		cfg.BatchLimit = int(min(k.vals[knob.Blimit].Int, 1<<40))
	}
	if _, ok := k.given[knob.QHiMark]; ok {
		cfg.QHiMark = int(min(k.vals[knob.QHiMark].Int, 1<<40))
	}
	if _, ok := k.given[knob.QLowMark]; ok {
		cfg.QLowMark = int(min(k.vals[knob.QLowMark].Int, 1<<40))
		cfg.QLowMarkZero = cfg.QLowMark == 0
	}
	if _, ok := k.given[knob.Divisor]; ok {
		// rcu_do_batch: a negative divisor is 7, at most BITS_PER_LONG - 2.
		d := k.vals[knob.Divisor].Int
		switch {
		case d < 0:
			d = 7
		case d > 62:
			d = 62
		}
		cfg.Divisor = int(d)
	}
	if _, ok := k.given[knob.ReschedNS]; ok {
		// rcu_do_batch keeps rcu_resched_ns within 1 ms..1 s.
		cfg.ReschedTime = sim.Time(min(max(k.vals[knob.ReschedNS].Int, int64(sim.Millisecond)), int64(sim.Second)))
	}
	if _, ok := k.given[knob.UseSoftirq]; ok {
		cfg.CoreKthread = !k.vals[knob.UseSoftirq].Bool()
		// rcu_cpu_kthread_setup makes rcuc SCHED_FIFO only with RCU_BOOST,
		// which the lines' builds have only on PREEMPT_RT.
		cfg.CoreKthreadNormalPrio = k.preempt != sim.PreemptRT
	}
	if _, ok := k.given[knob.WakeFromGP]; ok {
		cfg.WakeFromGP = k.on(knob.WakeFromGP)
	}
	_, g1 := k.given[knob.NoCBs]
	_, g2 := k.given[knob.NohzFull]
	if g1 || g2 {
		cfg.NoCB = k.offloaded(k.cpus)
	}
	_, l1 := k.given[knob.ConfigLazy]
	_, l2 := k.given[knob.EnableLazy]
	if l1 || l2 {
		cfg.Lazy = k.lazy()
	}
}

// lazy is whether call_rcu may be lazy: CONFIG_RCU_LAZY, and (6.9 on)
// enable_rcu_lazy.
func (k *Knobs) lazy() bool {
	if !k.vals[knob.ConfigLazy].Bool() {
		return false
	}
	if v, ok := k.vals[knob.EnableLazy]; ok {
		return v.Bool()
	}
	return true
}

// offloaded is rcu_nocb_mask on n CPUs: rcu_nocbs= and nohz_full=, less
// the boot CPU when nohz_full= names every CPU (housekeeping_setup keeps
// one housekeeping CPU).
func (k *Knobs) offloaded(n int) []bool {
	m := make([]bool, n)
	if v, ok := k.vals[knob.NoCBs]; ok {
		nm, _ := v.CPUs.Mask(n)
		for i := range m {
			m[i] = m[i] || nm[i]
		}
	}
	if v, ok := k.vals[knob.NohzFull]; ok {
		fm, _ := v.CPUs.Mask(n)
		if !slices.Contains(fm, false) {
			fm[0] = false
		}
		for i := range m {
			m[i] = m[i] || fm[i]
		}
	}
	return m
}

// ApplySim applies the given scheduler knobs to the machine: preempt= of
// a dynamic PREEMPT_RT kernel chooses its lazy mode.
func (k *Knobs) ApplySim(cfg *sim.Config) {
	if _, ok := k.given[knob.PreemptMode]; ok && cfg.Preempt == sim.PreemptRT {
		cfg.RTLazy = k.rtLazy
	}
}

// ApplyRegistry applies the given net knobs to a registry.
func (k *Knobs) ApplyRegistry(r *Registry) {
	if _, ok := k.given[knob.UnregisterTimeout]; ok {
		r.WarnEvery = int(k.vals[knob.UnregisterTimeout].Int)
	}
}

// ApplyNamespaces applies the given user knobs to the namespaces.
func (k *Knobs) ApplyNamespaces(ns *Namespaces) {
	if _, ok := k.given[knob.MaxNetNamespaces]; ok {
		ns.MaxNetNamespaces = int(k.vals[knob.MaxNetNamespaces].Int)
	}
}

// DescribeGiven says, in one line, which knobs were given ("" for none).
func (k *Knobs) DescribeGiven() string {
	return strings.Join(k.GivenList(), " ")
}
