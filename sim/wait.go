package sim

// ---- wait queues and completions ----

// WaitQueue holds tasks waiting for a condition.
type WaitQueue struct {
	waiters []waiter
}

type waiter struct {
	t   *Task
	gen uint64
}

// Wait blocks t until cond() holds; cond is re-checked after every wake-up.
func (q *WaitQueue) Wait(t *Task, cond func() bool) {
	for !cond() {
		q.waiters = append(q.waiters, waiter{t, t.prepareSleep()})
		t.block()
	}
}

// WaitTimeout blocks t until cond() holds or a timer armed for jiffies+n
// fires, like wait_event_timeout. It reports whether cond holds.
func (q *WaitQueue) WaitTimeout(t *Task, cond func() bool, n int64) bool {
	if cond() {
		return true
	}
	expired := false
	expire := t.e.Jiffies() + n
	for !cond() && !expired {
		gen := t.prepareSleep()
		q.waiters = append(q.waiters, waiter{t, gen})
		tm := t.cpu.AddTimer(expire, func() { expired = true; t.wakeIf(gen) })
		t.block()
		tm.Cancel()
	}
	return cond()
}

// WakeAll makes every waiter runnable (they re-check their condition).
func (q *WaitQueue) WakeAll() {
	w := q.waiters
	q.waiters = nil
	for _, x := range w {
		x.t.wakeIf(x.gen)
	}
}

// Len returns the number of waiting tasks.
func (q *WaitQueue) Len() int { return len(q.waiters) }

// Completion is the kernel's struct completion.
type Completion struct {
	done int
	wq   WaitQueue
}

// Wait blocks t until Complete has been called (consuming one completion).
func (c *Completion) Wait(t *Task) {
	c.wq.Wait(t, func() bool { return c.done > 0 })
	c.done--
}

// Complete wakes one waiter (or lets the next Wait return at once).
func (c *Completion) Complete() {
	c.done++
	c.wq.WakeAll()
}

// Done reports whether a completion is pending.
func (c *Completion) Done() bool { return c.done > 0 }
