package emu

import (
	"fmt"
	"slices"

	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/netdev"
)

// machineKnobs applies the knobs that choose the machine itself before it
// is validated: CONFIG_HZ is the emulated HZ and preempt= the preemption
// model (whether the line has them is checked with the other knobs), except
// on PREEMPT_RT, whose preempt= only chooses its lazy mode.
func machineKnobs(l []knob.Assignment, hz int, preempt string) (int, string) {
	for _, a := range l {
		switch a.Def.Name {
		case knob.ConfigHZ:
			hz = int(a.Value.Int)
		case knob.PreemptMode:
			if preempt != "rt" {
				preempt = a.Value.Choice()
			}
		}
	}
	return hz, preempt
}

// Knobs returns the line's knobs on the backend's machine.
func (b *Backend) Knobs() *netdev.Knobs { return b.r.knobs }

// knobAssignments parses a host's knobs and the command line's, the latter
// winning over the former for the same knob; froms says where each came
// from.
func knobAssignments(host []string, hostFrom string, params []string, from string) ([]knob.Assignment, []string, error) {
	h, err := knob.ParseAssignments(host)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", hostFrom, err)
	}
	p, err := knob.ParseAssignments(params)
	if err != nil {
		return nil, nil, err
	}
	var out []knob.Assignment
	var froms []string
	for _, a := range h {
		if !slices.ContainsFunc(p, func(b knob.Assignment) bool { return b.Def == a.Def }) {
			out, froms = append(out, a), append(froms, hostFrom)
		}
	}
	for _, a := range p {
		out, froms = append(out, a), append(froms, from)
	}
	return out, froms, nil
}
