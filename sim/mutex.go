package sim

// Mutex is a sleeping lock (struct mutex) in virtual time, with the wait
// list and the hand-off of the kernel it models:
//   - Waiters queue in arrival order (lock->wait_list), and an unlock wakes
//     only the first of them (6.18 kernel/locking/mutex.c
//     __mutex_unlock_slowpath l.950-960, as 2.6.31's
//     __mutex_unlock_common_slowpath did). The woken waiter takes the lock
//     when it runs if it is free.
//   - Until it runs, a task that is not waiting may take the free lock
//     first (the slow path's __mutex_trylock succeeds on an ownerless
//     lock whatever waits): the woken waiter then finds it held and sleeps
//     again, still first.
//   - With Config.MutexHandoff (4.10 on, "locking/mutex: Add lock handoff
//     to avoid starvation"; read in 5.10 and 6.18), a first waiter that
//     finds the lock taken sets MUTEX_FLAG_HANDOFF
//     (__mutex_trylock_or_handoff, 6.18 l.87-121 and l.690), and the next
//     unlock gives the lock to it directly (__mutex_handoff, l.962-963):
//     nothing can take it in between, so a waiter is passed over at most
//     once. Without it (2.6.3x) the lock can be taken from a woken waiter
//     every time.
//   - Under PREEMPT_RT a mutex is an rt_mutex: waiters queue by priority
//     (real-time ones ahead, arrival order among equals) and a task that
//     is not waiting may take the free lock only from a waiter it
//     outranks (rt_mutex_steal: no lateral steal between equals outside
//     the RT spinlocks).
//
// Left out: optimistic spinning on a running owner (mutex_optimistic_spin),
// which trades the waiter's sleep for CPU time, and priority inheritance.
type Mutex struct {
	owner *Task
	// waiters is the wait list, first to be woken at the front.
	waiters []*mutexWaiter
	// handoff is MUTEX_FLAG_HANDOFF: the next unlock gives the lock to the
	// first waiter.
	handoff bool
}

type mutexWaiter struct {
	t   *Task
	gen uint64
}

// Lock acquires the mutex, sleeping while another task holds it.
func (m *Mutex) Lock(t *Task) {
	t.MightSleep()
	if m.owner == t {
		panic("sim: recursive Mutex.Lock by task " + t.Name)
	}
	if m.owner == nil && m.mayTake(t) {
		m.owner = t
		return
	}
	w := &mutexWaiter{t: t}
	m.enqueue(w)
	for {
		w.gen = t.prepareSleep()
		t.block()
		if m.owner == t { // handed over by the unlock
			return
		}
		first := m.waiters[0] == w
		if m.owner == nil && first {
			m.waiters = m.waiters[1:]
			m.owner = t
			return
		}
		if first && t.e.cfg.MutexHandoff && t.e.cfg.Preempt != PreemptRT {
			m.handoff = true
		}
	}
}

// mayTake reports whether t, not waiting, may take the free mutex ahead
// of its waiters.
func (m *Mutex) mayTake(t *Task) bool {
	if len(m.waiters) == 0 {
		return true
	}
	if t.e.cfg.Preempt == PreemptRT {
		f := m.waiters[0].t
		return t.rt && (!f.rt || t.prio > f.prio)
	}
	return !m.handoff
}

// enqueue adds w to the wait list: at the end, or under PREEMPT_RT behind
// the waiters of its priority or above.
func (m *Mutex) enqueue(w *mutexWaiter) {
	i := len(m.waiters)
	if w.t.e.cfg.Preempt == PreemptRT && w.t.rt {
		i = 0
		for i < len(m.waiters) && m.waiters[i].t.rt && m.waiters[i].t.prio >= w.t.prio {
			i++
		}
	}
	m.waiters = append(m.waiters, nil)
	copy(m.waiters[i+1:], m.waiters[i:])
	m.waiters[i] = w
}

// Unlock releases the mutex and wakes its first waiter; with a hand-off
// requested, the mutex is that waiter's already.
func (m *Mutex) Unlock(t *Task) {
	if m.owner != t {
		panic("sim: Mutex.Unlock by a task that does not hold it: " + t.Name)
	}
	m.owner = nil
	if len(m.waiters) == 0 {
		m.handoff = false
		return
	}
	w := m.waiters[0]
	if m.handoff {
		m.handoff = false
		m.waiters = m.waiters[1:]
		m.owner = w.t
	}
	w.t.wakeIf(w.gen)
}

// Held reports whether the mutex is held (rtnl_is_locked).
func (m *Mutex) Held() bool { return m.owner != nil }

// Waiters returns the number of tasks waiting for the mutex.
func (m *Mutex) Waiters() int { return len(m.waiters) }
