package rcu

import (
	"fmt"

	"github.com/ndst-project/ndst/sim"
)

// Readers. A reader here disables preemption for its whole section
// (rcu_read_lock of non-preemptible RCU; for preemptible RCU it is the case
// of a reader that is not preempted: blocked-reader tracking and priority
// boosting are not modelled), so it also holds off its CPU's quiescent
// states.

type taskRCU struct{ nesting int }

func nestingOf(t *sim.Task) *taskRCU {
	if v, ok := t.Value.(*taskRCU); ok {
		return v
	}
	v := &taskRCU{}
	t.Value = v
	return v
}

// ReadLock enters a read-side critical section.
func (r *RCU) ReadLock(t *sim.Task) {
	nestingOf(t).nesting++
	t.PreemptDisable()
}

// ReadUnlock leaves a read-side critical section.
func (r *RCU) ReadUnlock(t *sim.Task) {
	n := nestingOf(t)
	if n.nesting == 0 {
		panic("rcu: ReadUnlock without ReadLock in task " + t.Name)
	}
	n.nesting--
	t.PreemptEnable()
}

func (r *RCU) mustNotBeReader(t *sim.Task, what string) {
	if nestingOf(t).nesting > 0 {
		panic(fmt.Sprintf("rcu: %s called inside an RCU read-side critical section (task %s): it would wait for itself", what, t.Name))
	}
}
