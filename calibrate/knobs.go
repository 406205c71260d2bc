package calibrate

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/hostknob"
	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// The host's knobs are inputs of its emulated kernel: a calibration reads
// every catalogue knob of the running kernel (package hostknob) and records
// it in the table's host section, and the emulated kernel of that host (the
// fit and its closure, predict) runs with them, so that a host with a knob
// changed is modelled as it is. A table without knobs runs with its line's
// defaults (HostKnobNote says so).

// readKnobs records the running kernel's knobs.
func readKnobs() []costs.HostKnob {
	var out []costs.HostKnob
	for _, r := range hostknob.Read() {
		out = append(out, costs.HostKnob{Name: r.Name, Value: r.Value, Source: r.Source, Missing: r.Missing})
	}
	return out
}

// HostParams are the host's recorded knobs that its line has and that are
// not at the line's default on the host's machine, as NAME=VALUE words for
// the emulated kernel (a knob at its default changes nothing there, and
// must not pin that default on another build or line: jiffies_till_first_fqs
// reads 1 at HZ=250 and defaults to 3 at HZ=1000), and the ones left out
// because the line lacks them. CONFIG_HZ is the host section's HZ already.
func HostParams(h *costs.Host) (params, skipped []string) {
	if h == nil {
		return nil, nil
	}
	p, ok := netdev.Profiles[h.Profile]
	var def *netdev.Knobs
	if ok {
		hp, _ := p.HostPreempt(h.Preempt)
		if pre, err := sim.ParsePreempt(hp); err == nil {
			rcu := h.RCU
			if c, err := p.Choose(rcu, max(1, h.CPUs), pre); err == nil {
				def, _ = p.ResolveKnobs(max(1, h.HZ), max(1, h.CPUs), pre, c.Name, nil, nil)
			}
		}
	}
	for _, k := range h.Knobs {
		if k.Value == "" || k.Name == knob.ConfigHZ {
			continue
		}
		if ok {
			if _, has := p.LineKnob(k.Name); !has {
				skipped = append(skipped, k.Name+" (line "+h.Profile+" lacks it)")
				continue
			}
		}
		if def != nil {
			if v, has := def.Value(k.Name); has && v.String() == canonical(k.Name, k.Value) {
				continue // at the line's default
			}
		}
		params = append(params, k.Name+"="+k.Value)
	}
	return params, skipped
}

// canonical prints a knob value as the catalogue does.
func canonical(name, value string) string {
	a, err := knob.ParseAssignment(name + "=" + value)
	if err != nil {
		return value
	}
	return a.Value.String()
}

// HostKnobNote says how a table's knobs reach its emulated host ("" when
// it recorded them all as they are).
func HostKnobNote(t *costs.Table) string {
	if t == nil || t.Host == nil {
		return ""
	}
	if !t.Host.KnobsRead {
		return "the cost table records no kernel knobs (written before calibrate read them): its host is emulated with line " +
			orUnknown(t.Host.Profile) + "'s defaults"
	}
	if _, skipped := HostParams(t.Host); len(skipped) > 0 {
		return "host knobs the emulated line does not model are left out: " + strings.Join(skipped, ", ")
	}
	return ""
}

// knobSummary is calibrate's line about the knobs it read: how many, and
// those that differ from the line's defaults on this machine.
func (r *Report) knobSummary() string {
	if r.Knobs == nil {
		return ""
	}
	read := 0
	for _, k := range r.Knobs {
		if k.Value != "" {
			read++
		}
	}
	s := fmt.Sprintf("kernel knobs:    %d of %d read", read, len(r.Knobs))
	h := &costs.Host{Profile: r.Profile, HZ: r.HZ, CPUs: r.Host.CPUs, Preempt: r.Host.Preempt, RCU: r.RCU, Knobs: r.Knobs}
	params, _ := HostParams(h)
	if len(params) == 0 {
		return s + fmt.Sprintf("; every one the line %s models is at its default\n", r.Profile)
	}
	return s + "; away from line " + r.Profile + "'s defaults, and emulated so: " + strings.Join(params, " ") + "\n"
}

// KnobDrift compares the knobs a table recorded with the running kernel's
// now: each knob whose value changed since the calibration, as "NAME was
// X, now Y" (nothing when the table recorded no knobs). A prediction from
// the table models the kernel as it was calibrated.
func KnobDrift(h *costs.Host) []string {
	if h == nil || !h.KnobsRead {
		return nil
	}
	then := map[string]string{}
	for _, k := range h.Knobs {
		then[k.Name] = k.Value
	}
	var out []string
	for _, r := range hostknob.Read() {
		was, ok := then[r.Name]
		if !ok || was == r.Value {
			continue
		}
		out = append(out, fmt.Sprintf("%s was %s, now %s", r.Name, orDashKnob(was), orDashKnob(r.Value)))
	}
	return out
}

func orDashKnob(v string) string {
	if v == "" {
		return "(not read)"
	}
	return v
}
