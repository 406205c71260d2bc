package emu

import (
	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/netdev"
)

// machineKnobs applies the knobs that choose the machine itself before it
// is validated: CONFIG_HZ is the emulated HZ and preempt= the preemption
// model (whether the line has them is checked with the other knobs).
func machineKnobs(l []knob.Assignment, hz int, preempt string) (int, string) {
	for _, a := range l {
		switch a.Def.Name {
		case knob.ConfigHZ:
			hz = int(a.Value.Int)
		case knob.PreemptMode:
			preempt = a.Value.Choice()
		}
	}
	return hz, preempt
}

// Knobs returns the line's knobs on the backend's machine.
func (b *Backend) Knobs() *netdev.Knobs { return b.r.knobs }
