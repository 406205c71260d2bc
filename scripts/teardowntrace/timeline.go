package main

import (
	"fmt"
	"sort"
	"strings"
)

// Item is one step of a delete's timeline. Label is what the summary groups
// by (the same step across deletes); Detail says what happened, in terms
// relative to the delete (J+n, not absolute jiffies), so equal steps compare
// equal.
type Item struct {
	Label  string
	T      int64 // trace time, ns
	CPU    int
	Detail string
	Who    string // for wakeups: the waker's context
	key    bool
	passes int    // RCU softirq items: softirq runs merged into this one
	Note   string // shown in the timeline only // a milestone: shown in the summary, not only in the timeline
}

// Delete is one RTM_DELLINK sendmsg and what the trace shows during it.
type Delete struct {
	N               int
	Call            Call
	J0              int64 // grid index of the sendmsg entry
	Timeline        []Item
	CPUEvents       map[int]int // events recorded per CPU during the call
	CPUTicks        map[int]int // tick interrupts per CPU during the call
	Blocks          int         // times the task was switched out blocked
	Preempts        int         // times it was switched out runnable (state R)
	UnseenSwitchIns int         // runs of the task or GP kthread whose switch-in the trace lacks
	ExpWakes        int         // wakeups of the expedited-GP kthread
	GPRuns          []string    // "J+1 by RCU softirq", one per GP kthread run
	FQSArmed        []string    // "J+1 timeout=1 expires J+2 bucket J+3"
	FQSFired        []string    // "J+3"
	FQSCancel       []string    // "J+2"
	WokenBy         string      // context of the final wakeup: "RCU softirq"
	BlockedIn       string      // condensed kernel stack while blocked (stack samples)
	Samples         int         // stack samples taken during the call
	BlockJ          int64       // J+n of the final block
	WokenJ          int64
	HaveWoken       bool
	RanJ            int64 // J+n at which the task ran again after the final wakeup
	HaveRan         bool
	finalBlock      int // index into Timeline
	finalWake       int
	softByJ         map[[2]int64]int // (cpu, J+n) -> RCU softirq item
	tickJ           map[int64]bool   // J+n in which some CPU's tick was recorded
}

// EndJ is the jiffy (J+n) in which sendmsg returned.
func (d *Delete) EndJ(g Grid) int64 { return g.Index(d.Call.End) - d.J0 }

// Duration of the sendmsg in ns.
func (d *Delete) Duration() int64 { return d.Call.End - d.Call.Start }

// QuietCPUs lists the CPUs that did not tick during the delete (their tick
// was stopped: idle, or not recorded at all).
func (d *Delete) QuietCPUs(cpus []int) []int {
	var q []int
	for _, c := range cpus {
		if d.CPUTicks[c] == 0 {
			q = append(q, c)
		}
	}
	return q
}

// Options steer the analysis.
type Options struct {
	HZ     int    // 0: estimate
	TID    int    // 0: marker or auto
	Comm   string // workload command name for auto-detection
	FD     int64  // -1: auto
	GPName string // GP kthread name; "" = rcu_preempt, else rcu_sched
	NCPU   int    // CPUs of the traced machine; 0: from the trace header, else the CPUs with events
}

// Analysis is the whole result.
type Analysis struct {
	Trace    *Trace
	Grid     Grid
	Work     Workload
	FDNote   string
	GPComm   string
	GPPID    int
	CPUs     []int
	Deletes  []*Delete
	Stacks   map[string]int // condensed stack -> samples in state D during the deletes
	NStacks  int
	Counts   map[string]int // events per name
	CPUCount map[int]int    // events per CPU over the whole trace
	// IdleSwitches[cpu] = {switches into the idle task, switches out of it}
	IdleSwitches map[int][2]int
}

// Analyze builds the per-delete timelines.
func Analyze(t *Trace, o Options) (*Analysis, error) {
	if len(t.Events) == 0 {
		return nil, fmt.Errorf("no trace events found (%d lines not understood)", t.Skipped)
	}
	a := &Analysis{Trace: t, Stacks: map[string]int{}, Counts: map[string]int{}, CPUCount: map[int]int{}, IdleSwitches: map[int][2]int{}}
	g, err := EstimateGrid(t.Events, o.HZ)
	if err != nil {
		return nil, err
	}
	g.FitJiffies(t.Events)
	a.Grid = g
	if o.Comm == "" {
		o.Comm = "ip"
	}
	a.Work, err = FindWorkload(t.Events, o.TID, o.Comm)
	if err != nil {
		return nil, err
	}
	calls, note := DeleteCalls(Sendmsgs(t.Events, a.Work.TID), o.FD)
	a.FDNote = note
	if len(calls) == 0 {
		return nil, fmt.Errorf("task %d has no complete sendmsg call on the delete socket", a.Work.TID)
	}
	a.GPComm, a.GPPID = findGPKthread(t.Events, o.GPName)
	cpuSet := map[int]bool{}
	ncpu := o.NCPU
	if ncpu == 0 {
		ncpu = t.NCPU
	}
	for c := 0; c < ncpu; c++ {
		cpuSet[c] = true
	}
	for i := range t.Events {
		cpuSet[t.Events[i].CPU] = true
		ev := &t.Events[i]
		a.Counts[ev.Name]++
		a.CPUCount[ev.CPU]++
		if ev.Name == "sched_switch" {
			sw := a.IdleSwitches[ev.CPU]
			if n, _ := ev.ArgInt("next_pid"); n == 0 {
				sw[0]++
			}
			if p, _ := ev.ArgInt("prev_pid"); p == 0 {
				sw[1]++
			}
			a.IdleSwitches[ev.CPU] = sw
		}
	}
	for c := range cpuSet {
		a.CPUs = append(a.CPUs, c)
	}
	sort.Ints(a.CPUs)
	for i, c := range calls {
		a.Deletes = append(a.Deletes, &Delete{N: i + 1, Call: c, J0: g.Index(c.Start),
			CPUEvents: map[int]int{}, CPUTicks: map[int]int{}, finalBlock: -1, finalWake: -1,
			softByJ: map[[2]int64]int{}, tickJ: map[int64]bool{}})
	}
	a.walk()
	return a, nil
}

// findGPKthread returns the grace-period kthread's name and pid as the
// scheduler events show them (rcu_preempt on preemptible RCU, rcu_sched otherwise).
func findGPKthread(evs []Event, name string) (string, int) {
	names := []string{"rcu_preempt", "rcu_sched"}
	if name != "" {
		names = []string{name}
	}
	for _, n := range names {
		for i := range evs {
			ev := &evs[i]
			if ev.Comm == n {
				return n, ev.TID
			}
			if ev.Name == "sched_switch" && ev.Arg("next_comm") == n {
				p, _ := ev.ArgInt("next_pid")
				return n, int(p)
			}
		}
	}
	return names[0], -1
}

// armed is an FQS timer armed by the GP kthread.
type armed struct {
	del             *Delete
	expJ, bucketJ   int64
	haveBucket      bool
	timeout         int64
	armedJ          int64
	expires, bucket int64
	seq             int // #n of the arming within its delete
}

// walk runs through the events once, following each CPU's context, and
// fills in the deletes' timelines.
func (a *Analysis) walk() {
	evs := a.Trace.Events
	g := a.Grid
	ctx := Contexts{}
	tid, gp := a.Work.TID, a.GPPID
	timers := map[string]*armed{}
	softItem := map[int]int{} // cpu -> index of the open RCU-softirq item in cur.Timeline
	gpWaker := ""
	gpRun := 0
	ipOff, gpOff := false, false
	di := 0
	for i := range evs {
		ev := &evs[i]
		for di < len(a.Deletes) && a.Deletes[di].Call.EndEv < i {
			di++
		}
		var cur *Delete
		if di < len(a.Deletes) && a.Deletes[di].Call.StartEv <= i {
			cur = a.Deletes[di]
		}
		// Some switch-ins are never recorded (here: every switch out of
		// CPU1's idle task). A task that was seen going off the CPU and
		// then records an event of its own is running again.
		ipBack := ev.TID == tid && ipOff && !isSwitchTo(ev, tid)
		gpBack := ev.TID == gp && gpOff && !isSwitchTo(ev, gp)
		if ipBack {
			ipOff = false
		}
		if gpBack {
			gpOff = false
		}
		if ev.Name == "sched_waking" || ev.Name == "sched_wakeup" {
			// a task being woken was off the CPU
			switch p, _ := ev.ArgInt("pid"); int(p) {
			case tid:
				ipOff = true
			case gp:
				gpOff = true
			}
		}
		if ev.Name == "sched_switch" {
			prev, _ := ev.ArgInt("prev_pid")
			next, _ := ev.ArgInt("next_pid")
			switch {
			case int(prev) == tid:
				ipOff = true
			case int(next) == tid:
				ipOff = false
			}
			switch {
			case int(prev) == gp:
				gpOff = true
			case int(next) == gp:
				gpOff = false
			}
		}
		if cur == nil {
			// The GP kthread's timer can be armed before a delete starts;
			// keep following it, and the contexts, outside deletes too.
			ctx.Observe(ev)
			continue
		}
		if cur.Call.StartEv == i {
			gpRun = 0
			softItem = map[int]int{}
		}
		rel := func(t int64) int64 { return g.Index(t) - cur.J0 }
		add := func(label, detail string, key bool) int {
			cur.Timeline = append(cur.Timeline, Item{Label: label, T: ev.TS, CPU: ev.CPU, Detail: detail, key: key})
			return len(cur.Timeline) - 1
		}
		cur.CPUEvents[ev.CPU]++
		const unseen = "switch-in not recorded: first event of its own"
		if ipBack {
			k := add("ip runs", "", false)
			cur.Timeline[k].Note = unseen
		}
		gpStart := func(note string) {
			gpRun++
			w := gpWaker
			if w == "" {
				w = "?"
			}
			k := add(fmt.Sprintf("GP kthread run #%d", gpRun), "woken by "+w, true)
			cur.Timeline[k].Note = note
			cur.GPRuns = append(cur.GPRuns, fmt.Sprintf("J+%d:%s", rel(ev.TS), shortCtx(w)))
			if note != "" {
				cur.UnseenSwitchIns++
			}
			gpWaker = ""
		}
		if gpBack {
			gpStart(unseen)
		}
		switch ev.Name {
		case "sys_enter_sendmsg":
			if i == cur.Call.StartEv {
				add("delete start", fmt.Sprintf("sendmsg(fd %d) by %s/%d", cur.Call.FD, ev.Comm, ev.TID), true)
			}
		case "sys_exit_sendmsg":
			if i == cur.Call.EndEv {
				add("sendmsg returns", "returns "+ev.Args, true)
			}
		case "hrtimer_expire_entry":
			if isTick(ev) {
				cur.CPUTicks[ev.CPU]++
				cur.tickJ[rel(ev.TS)] = true
				add("tick", "", false)
			}
		case "softirq_entry":
			// One item per CPU and jiffy: the softirq re-raises itself
			// while callbacks remain (rcu_do_batch's limit), and those
			// passes run back to back.
			if ev.Arg("action") == "RCU" {
				key := [2]int64{int64(ev.CPU), rel(ev.TS)}
				k, ok := cur.softByJ[key]
				if !ok {
					k = add(fmt.Sprintf("RCU softirq cpu%d J+%d", ev.CPU, rel(ev.TS)), "", true)
					cur.softByJ[key] = k
				}
				cur.Timeline[k].passes++
				softItem[ev.CPU] = k
			}
		case "softirq_exit":
			if _, ok := softItem[ev.CPU]; ok && ev.Arg("action") == "RCU" {
				delete(softItem, ev.CPU)
			}
		case "sched_waking", "sched_wakeup":
			if ev.Name == "sched_wakeup" && a.Counts["sched_waking"] > 0 {
				break // sched_waking already named the waker, in its context
			}
			p, _ := ev.ArgInt("pid")
			who := ctx.Describe(ev)
			if k, ok := softItem[ev.CPU]; ok {
				d := &cur.Timeline[k].Detail
				w := "wakes " + ev.Arg("comm")
				switch {
				case *d == "":
					*d = w
				case !strings.Contains(*d, w):
					*d += ", " + w
				}
			}
			switch {
			case int(p) == tid:
				in := "interrupting a task"
				switch {
				case ev.Comm == "swapper" || strings.HasPrefix(ev.Comm, "swapper/"):
					in = "in the idle task"
				case strings.HasPrefix(ev.Comm, "ksoftirqd"):
					in = "in " + ev.Comm
				case !strings.Contains(who, "softirq") && !strings.Contains(who, "hardirq"):
					in = "" // a task woke it directly
				}
				if in != "" {
					in = " (" + in + ")"
				}
				cur.finalWake = add("ip woken", "by "+who+in, false)
				cur.Timeline[cur.finalWake].Who = who
			case int(p) == gp:
				gpWaker = who
				add("GP kthread woken", "by "+who, false)
			case ev.Arg("comm") == "rcu_exp_gp_kthr" || strings.HasPrefix(ev.Arg("comm"), "rcu_exp"):
				cur.ExpWakes++
				add("expedited-GP kthread woken", "by "+who, false)
			}
		case "sched_switch":
			prev, _ := ev.ArgInt("prev_pid")
			next, _ := ev.ArgInt("next_pid")
			if int(prev) == tid {
				st := ev.Arg("prev_state")
				if strings.HasPrefix(st, "R") {
					cur.Preempts++
					add("ip preempted", fmt.Sprintf("state %s, switches to %s", st, ev.Arg("next_comm")), false)
				} else {
					cur.Blocks++
					add("ip blocks", fmt.Sprintf("state %s, switches to %s", st, ev.Arg("next_comm")), false)
				}
			}
			if int(next) == tid {
				add("ip runs", "", false)
			}
			if ipBack && int(prev) == tid {
				cur.UnseenSwitchIns++
			}
			if int(prev) == gp {
				add("GP kthread sleeps", "state "+ev.Arg("prev_state"), false)
			}
			if int(next) == gp {
				gpStart("")
			}
		case "timer_start":
			if ev.TID == gp && ev.Arg("function") == "process_timeout" {
				exp, _ := ev.ArgInt("expires")
				to, _ := ev.ArgInt("timeout")
				bkt, hb := ev.ArgInt("bucket_expiry")
				at := &armed{del: cur, timeout: to, expires: exp, bucket: bkt, haveBucket: hb,
					armedJ: rel(ev.TS), expJ: g.JiffyIndex(exp) - cur.J0, bucketJ: g.JiffyIndex(bkt) - cur.J0,
					seq: len(cur.FQSArmed) + 1}
				timers[ev.Arg("timer")] = at
				detail := fmt.Sprintf("schedule_timeout(%d): expires J+%d", to, at.expJ)
				if hb {
					detail += fmt.Sprintf(", bucket_expiry J+%d (+%d)", at.bucketJ, bkt-exp)
				}
				if !g.HaveJiff {
					detail = fmt.Sprintf("schedule_timeout(%d) (no jiffies reference in the trace)", to)
				}
				add(fmt.Sprintf("FQS timer armed #%d", len(cur.FQSArmed)+1), detail, true)
				cur.FQSArmed = append(cur.FQSArmed, fmt.Sprintf("J+%d:%d>J+%d/J+%d", at.armedJ, to, at.expJ, at.bucketJ))
			}
		case "timer_expire_entry":
			if at, ok := timers[ev.Arg("timer")]; ok && ev.Arg("function") == "process_timeout" {
				now, _ := ev.ArgInt("now")
				nowJ := g.JiffyIndex(now) - cur.J0
				detail := fmt.Sprintf("jiffies J+%d", nowJ)
				if at.del == cur {
					switch {
					case at.haveBucket && now == at.bucket:
						detail += " = its bucket_expiry"
					case now == at.expires:
						detail += " = its expires"
					}
					detail += fmt.Sprintf(" (expires J+%d)", at.expJ)
				} else {
					detail += " (armed before this delete)"
				}
				label := "FQS timer (armed earlier) fires"
				if at.del == cur {
					label = fmt.Sprintf("FQS timer #%d fires", at.seq)
				}
				add(label, detail, true)
				cur.FQSFired = append(cur.FQSFired, fmt.Sprintf("J+%d", rel(ev.TS)))
				delete(timers, ev.Arg("timer"))
			}
		case "timer_cancel":
			// A timer that expires is detached with a timer_cancel event
			// just before its timer_expire_entry; only a timer_cancel not
			// followed by the expiry is a real cancellation.
			if at, ok := timers[ev.Arg("timer")]; ok && !expiresNext(evs, i) {
				d := "before it fired"
				if at.del == cur {
					d = fmt.Sprintf("armed at J+%d for J+%d", at.armedJ, at.bucketJ)
				}
				label := "FQS timer (armed earlier) cancelled"
				if at.del == cur {
					label = fmt.Sprintf("FQS timer #%d cancelled", at.seq)
				}
				add(label, d, true)
				cur.FQSCancel = append(cur.FQSCancel, fmt.Sprintf("J+%d", rel(ev.TS)))
				delete(timers, ev.Arg("timer"))
			}
		case "tracing_mark_write":
			if s, ok := parseStackMarker(ev.Args); ok && s.TID == tid {
				cur.Samples++
				add("stack sample", fmt.Sprintf("state %s: %s", s.State, s.Condensed()), false)
				if s.State == "D" {
					a.Stacks[s.Condensed()]++
					a.NStacks++
				}
			}
		}
		ctx.Observe(ev)
	}
	for _, d := range a.Deletes {
		for k := range d.Timeline {
			it := &d.Timeline[k]
			if !strings.HasPrefix(it.Label, "RCU softirq") {
				continue
			}
			if it.Detail == "" {
				it.Detail = "no wakeup"
			}
			if it.passes > 1 {
				it.Detail += fmt.Sprintf(" (%d runs)", it.passes)
			}
		}
		a.finish(d)
	}
}

// finish marks the final block and wakeup of a delete as milestones and
// attributes its stack samples.
func (a *Analysis) finish(d *Delete) {
	g := a.Grid
	// The final wakeup is the last one before sendmsg returns; the final
	// block is the last switch-out before it.
	if d.finalWake >= 0 {
		it := &d.Timeline[d.finalWake]
		it.key = true
		it.Label = "ip woken (final)"
		d.WokenBy = it.Who
		d.WokenJ, d.HaveWoken = g.Index(it.T)-d.J0, true
		for k := d.finalWake - 1; k >= 0; k-- {
			if d.Timeline[k].Label == "ip blocks" {
				d.finalBlock = k
				break
			}
		}
		for k := d.finalWake + 1; k < len(d.Timeline); k++ {
			if r := &d.Timeline[k]; r.Label == "ip runs" {
				r.key = true
				r.Label = "ip runs after the wakeup"
				if delay := r.T - it.T; delay < 100_000 {
					r.Detail = "within 0.1 ms of the wakeup"
				} else {
					r.Detail = fmt.Sprintf("%.1f ms after the wakeup", ms(delay))
				}
				d.RanJ, d.HaveRan = g.Index(r.T)-d.J0, true
				break
			}
		}
	}
	if d.finalBlock >= 0 {
		it := &d.Timeline[d.finalBlock]
		it.key = true
		it.Label = "ip blocks (final wait)"
		it.Detail, _, _ = strings.Cut(it.Detail, ",")
		if d.Blocks > 1 {
			it.Detail += fmt.Sprintf(", after %d shorter waits", d.Blocks-1)
		}
		d.BlockJ = g.Index(it.T) - d.J0
		end := len(d.Timeline)
		if d.finalWake >= 0 {
			end = d.finalWake
		}
		stacks := map[string]int{}
		for _, s := range d.Timeline[d.finalBlock:end] {
			if s.Label == "stack sample" && strings.HasPrefix(s.Detail, "state D: ") {
				st := strings.TrimPrefix(s.Detail, "state D: ")
				stacks[st]++
			}
		}
		if best := mode(stacks); best != "" {
			d.BlockedIn = best
			it.Detail += "; in " + best
		}
	}
}

// shortCtx abbreviates a context description for one-line tables.
func shortCtx(s string) string {
	s = strings.Replace(s, "TIMER softirq (process_timeout)", "timer", 1)
	s = strings.Replace(s, " softirq", "-sirq", 1)
	return strings.TrimPrefix(s, "task ")
}

// mode returns the most common key (ties: the smallest).
func mode(m map[string]int) string {
	best, n := "", 0
	for k, v := range m {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	return best
}

// expiresNext reports whether the timer_cancel at evs[i] is the detach of an
// expiring timer: a timer_expire_entry for the same timer follows on the same
// CPU before that CPU leaves the softirq.
func expiresNext(evs []Event, i int) bool {
	timer, cpu := evs[i].Arg("timer"), evs[i].CPU
	for k := i + 1; k < len(evs) && k < i+200; k++ {
		ev := &evs[k]
		if ev.CPU != cpu {
			continue
		}
		switch ev.Name {
		case "timer_expire_entry":
			return ev.Arg("timer") == timer
		case "softirq_exit", "sched_switch", "timer_start", "timer_cancel":
			return false
		}
	}
	return false
}

// isSwitchTo reports whether ev is the sched_switch that puts pid on the CPU.
func isSwitchTo(ev *Event, pid int) bool {
	if ev.Name != "sched_switch" {
		return false
	}
	n, _ := ev.ArgInt("next_pid")
	return int(n) == pid
}

// TicklessJiffies counts the jiffies J+1 .. J+end of the delete in which no
// CPU's tick was recorded. While the barrier callback waits some CPU keeps
// its tick, so a tickless jiffy means the recorder lost events.
func (d *Delete) TicklessJiffies(g Grid) int {
	n := 0
	for j := int64(1); j <= d.EndJ(g); j++ {
		if !d.tickJ[j] {
			n++
		}
	}
	return n
}
