package sim

// Phase attribution: a task's time is attributed, as it passes, to the phase
// the model code says the task is in (a label such as "rcu_barrier"). Each
// phase's time splits into CPU (what the task charged) and waiting
// (everything else: sleeping, waiting for its CPU, interrupted by interrupt
// work). The phases of a task sum exactly to the time since the first
// SetPhase, because every instant belongs to exactly one phase: nothing is
// reconstructed afterwards.

// PhaseTime is the time one phase took.
type PhaseTime struct {
	Name string
	CPU  Time // charged by the task while in the phase
	Wait Time // the rest of the phase's time
}

type phaseState struct {
	name  string
	since Time
	cpu   Time // charged since `since`
	acc   []PhaseTime
}

// SetPhase moves the task into phase p and returns the phase it was in
// ("" before the first call). Use it as: defer t.SetPhase(t.SetPhase(p)).
func (t *Task) SetPhase(p string) string {
	if t.e.cfg.NoPhases {
		return ""
	}
	ps := &t.phase
	prev := ps.name
	if prev != "" {
		ps.add(prev, ps.cpu, t.e.now-ps.since)
		if t.e.trace != nil {
			t.e.traceSpan(tracePidTasks, t.PID, "phase", prev, ps.since, map[string]any{"cpu_us": us(ps.cpu)})
		}
	}
	ps.name, ps.since, ps.cpu = p, t.e.now, 0
	return prev
}

// Phase returns the task's current phase.
func (t *Task) Phase() string { return t.phase.name }

// Phases returns the time of every phase so far (the current one up to
// now), in the order the phases were first entered.
func (t *Task) Phases() []PhaseTime {
	ps := t.phase
	out := append([]PhaseTime(nil), ps.acc...)
	if ps.name != "" {
		tmp := phaseState{acc: out}
		tmp.add(ps.name, ps.cpu, t.e.now-ps.since)
		out = tmp.acc
	}
	return out
}

func (ps *phaseState) add(name string, cpu, total Time) {
	for i := range ps.acc {
		if ps.acc[i].Name == name {
			ps.acc[i].CPU += cpu
			ps.acc[i].Wait += total - cpu
			return
		}
	}
	ps.acc = append(ps.acc, PhaseTime{Name: name, CPU: cpu, Wait: total - cpu})
}

// chargedInPhase notes d of CPU charged by the task.
func (t *Task) chargedInPhase(d Time) {
	if t.phase.name != "" {
		t.phase.cpu += d
	}
}
