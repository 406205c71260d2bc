package sim

import "container/heap"

// TimerWheel is the timer wheel of a kernel line: which tick runs a timer
// armed (add_timer) with expiry jiffy E.
type TimerWheel int

const (
	// TimerCascade is the cascading wheel of kernels before 4.8: a timer
	// runs in the timer softirq of the tick at which jiffies reaches E, so
	// schedule_timeout(1) sleeps until the next tick.
	TimerCascade TimerWheel = iota
	// TimerLevels is the non-cascading wheel of 4.8 and later
	// (kernel/time/timer.c, calc_wheel_index and calc_index): a timer goes
	// into a bucket of the level its distance selects (level n holds
	// distances below 63<<3n and has a granularity of 8^n jiffies), and the
	// bucket's expiry is E rounded up to the next multiple of that
	// granularity, strictly above E ("a timer does not fire early": armed
	// at the edge of a tick it might otherwise). So a 1-jiffy timeout armed
	// at jiffy J fires at tick J+2, and at HZ=250 a 63-jiffy msleep(250)
	// lands at the next multiple of 8 above J+63.
	TimerLevels
)

func (w TimerWheel) String() string {
	if w == TimerLevels {
		return "levels"
	}
	return "cascade"
}

// Level geometry of the non-cascading wheel.
const (
	wheelClkShift = 3 // LVL_CLK_SHIFT
	wheelBits     = 6 // LVL_BITS
	wheelSize     = 1 << wheelBits
	wheelDepth    = 9 // LVL_DEPTH for HZ > 100
)

// fireJiffy returns the tick at which a timer armed now for expire runs.
func (e *Engine) fireJiffy(expire int64) int64 {
	clk := e.Jiffies()
	if e.cfg.Timers == TimerCascade {
		return max(expire, clk)
	}
	delta := expire - clk
	if delta < 0 {
		return clk
	}
	lvl := wheelDepth - 1
	for n := 1; n < wheelDepth; n++ {
		if delta < (wheelSize-1)<<((n-1)*wheelClkShift) { // LVL_START(n)
			lvl = n - 1
			break
		}
	}
	shift := uint(lvl * wheelClkShift)
	return ((expire >> shift) + 1) << shift
}

// Timer is a pending timer; Cancel removes it.
type Timer struct {
	expire int64 // the jiffy it was armed for
	fire   int64 // the tick that runs it (fireJiffy)
	seq    uint64
	fn     func()
	index  int
	q      *timerQueue
}

// Cancel deletes the timer if it has not fired.
func (tm *Timer) Cancel() {
	if tm != nil && tm.index >= 0 {
		heap.Remove(tm.q, tm.index)
	}
}

// AddTimer arms a timer on the CPU for jiffy expire (add_timer); it runs in
// the timer softirq of the tick the wheel assigns (see TimerWheel).
func (c *CPU) AddTimer(expire int64, fn func()) *Timer {
	c.e.seq++
	tm := &Timer{expire: expire, fire: c.e.fireJiffy(expire), seq: c.e.seq, fn: fn, q: c.timers}
	heap.Push(c.timers, tm)
	c.ensureTick()
	return tm
}

// runTimers is the timer softirq: run every timer whose tick has come.
func (c *CPU) runTimers() {
	j := c.e.Jiffies()
	for {
		fire, ok := c.timers.earliest()
		if !ok || fire > j {
			return
		}
		tm := heap.Pop(c.timers).(*Timer)
		tm.fn()
	}
}

type timerQueue []*Timer

func newTimerQueue() *timerQueue { return &timerQueue{} }

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].fire != q[j].fire {
		return q[i].fire < q[j].fire
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i]; q[i].index = i; q[j].index = j }
func (q *timerQueue) Push(x any)   { tm := x.(*Timer); tm.index = len(*q); *q = append(*q, tm) }
func (q *timerQueue) Pop() any {
	old := *q
	n := len(old)
	tm := old[n-1]
	old[n-1] = nil
	tm.index = -1
	*q = old[:n-1]
	return tm
}

// earliest returns the tick of the first timer to run.
func (q *timerQueue) earliest() (int64, bool) {
	if len(*q) == 0 {
		return 0, false
	}
	return (*q)[0].fire, true
}
