package main

import "fmt"

// cpuContext follows what one CPU is doing from its events: the task it runs
// and the softirq, timer callback or hard interrupt it is inside. perf output
// has no context column, so entry/exit events are the only source there; a
// tracefs event's irq-info flags override them when present.
type cpuContext struct {
	task    string // comm of the running task
	softirq string // action of the softirq being run ("RCU", "TIMER", ...), "" outside
	timerFn string // timer callback running inside the TIMER softirq
	hardirq bool
	hrFn    string // hrtimer callback running in the hard interrupt
}

// Contexts tracks every CPU.
type Contexts map[int]*cpuContext

func (cs Contexts) get(cpu int) *cpuContext {
	c := cs[cpu]
	if c == nil {
		c = &cpuContext{}
		cs[cpu] = c
	}
	return c
}

// Observe updates the CPU's context with ev. Call it for every event in order,
// after Describe for events whose context matters.
func (cs Contexts) Observe(ev *Event) {
	c := cs.get(ev.CPU)
	c.task = ev.Comm
	switch ev.Name {
	case "local_timer_entry", "irq_handler_entry":
		c.hardirq = true
	case "local_timer_exit", "irq_handler_exit":
		c.hardirq, c.hrFn = false, ""
	case "hrtimer_expire_entry":
		c.hardirq, c.hrFn = true, ev.Arg("function")
	case "hrtimer_expire_exit":
		c.hrFn = ""
	case "softirq_entry":
		c.hardirq, c.hrFn = false, ""
		c.softirq = ev.Arg("action")
	case "softirq_exit":
		c.softirq, c.timerFn = "", ""
	case "timer_expire_entry":
		c.timerFn = ev.Arg("function")
	case "timer_expire_exit":
		c.timerFn = ""
	case "sched_switch":
		c.hardirq, c.hrFn, c.softirq, c.timerFn = false, "", "", ""
		c.task = ev.Arg("next_comm")
	}
}

// Describe says in which context ev ran: "RCU softirq", "TIMER softirq
// (process_timeout)", "hardirq (tick_nohz_handler)" or "task NAME".
func (cs Contexts) Describe(ev *Event) string {
	c := cs.get(ev.CPU)
	soft, hard := c.softirq != "", c.hardirq
	if ev.Flags != "" { // tracefs says it directly
		soft, hard = ev.SoftIRQ(), ev.HardIRQ()
	}
	switch {
	case hard && c.hrFn != "":
		return fmt.Sprintf("hardirq (%s)", c.hrFn)
	case hard:
		return "hardirq"
	case soft && c.softirq == "TIMER" && c.timerFn != "":
		return fmt.Sprintf("TIMER softirq (%s)", c.timerFn)
	case soft && c.softirq != "":
		return c.softirq + " softirq"
	case soft:
		return "softirq"
	}
	return "task " + ev.Comm
}
