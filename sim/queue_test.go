package sim

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestEventQueueRunsInTimeThenSequenceOrder: whatever mix of new events,
// re-armed recurring ones, cancellations, disarms and reschedules the engine
// makes, the events run in (time, sequence) order, each live one exactly
// once, the cancelled and disarmed ones never.
func TestEventQueueRunsInTimeThenSequenceOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := &Engine{}
		type key struct {
			at  Time
			seq uint64
		}
		var (
			want    = map[*Event]key{} // live events and their keys
			ran     []key
			armed   []*Event // recurring events, armed again after they run
			pending []*Event
		)
		for range 4 {
			ev := &Event{index: -1}
			ev.fn = func() { ran = append(ran, key{e.now, ev.seq}) }
			armed = append(armed, ev)
		}
		n := rapid.IntRange(1, 200).Draw(rt, "ops")
		for range n {
			switch op := rapid.IntRange(0, 4).Draw(rt, "op"); op {
			case 0: // a new event
				at := e.now + Time(rapid.IntRange(0, 20).Draw(rt, "at"))
				var ev *Event
				ev = e.At(at, func() { ran = append(ran, key{e.now, ev.seq}) })
				want[ev] = key{ev.at, ev.seq}
				pending = append(pending, ev)
			case 1: // arm a recurring event that is not pending
				ev := armed[rapid.IntRange(0, len(armed)-1).Draw(rt, "which")]
				if _, ok := want[ev]; ok {
					continue
				}
				e.arm(ev, e.now+Time(rapid.IntRange(0, 20).Draw(rt, "at")))
				want[ev] = key{ev.at, ev.seq}
				pending = append(pending, ev)
			case 2, 3: // cancel, disarm or reschedule a pending event
				if len(pending) == 0 {
					continue
				}
				i := rapid.IntRange(0, len(pending)-1).Draw(rt, "victim")
				ev := pending[i]
				if _, ok := want[ev]; !ok {
					continue
				}
				switch {
				case op == 3:
					e.reschedule(ev, ev.at+Time(rapid.IntRange(0, 10).Draw(rt, "later")))
					want[ev] = key{ev.at, ev.seq}
				case slices.Contains(armed, ev):
					e.disarm(ev)
					delete(want, ev)
				default:
					ev.Cancel()
					delete(want, ev)
				}
			case 4: // run the next live event
				if e.nextEventAt() < 0 {
					continue
				}
				ev := e.queue.drop()
				delete(want, ev)
				e.now = ev.at
				ev.fn()
			}
		}
		for e.nextEventAt() >= 0 {
			ev := e.queue.drop()
			delete(want, ev)
			e.now = ev.at
			ev.fn()
		}
		if len(want) != 0 {
			rt.Fatalf("%d live events never ran", len(want))
		}
		if !slices.IsSortedFunc(ran, func(a, b key) int {
			if a.at != b.at {
				return int(a.at - b.at)
			}
			return int(int64(a.seq) - int64(b.seq))
		}) {
			rt.Fatalf("events ran out of (time, sequence) order: %v", ran)
		}
		for _, ev := range e.queue {
			if !ev.cancelled {
				rt.Fatalf("a live event is left in the queue")
			}
		}
	})
}

// TestStoppedRunLeavesNoGoroutine: a run stopped with tasks blocked,
// charging and never started unwinds every task's coroutine.
func TestStoppedRunLeavesNoGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	for range 20 {
		e := newTestEngine(t, Config{HZ: 250, CPUs: 2, Jitter: 0.05, ContextSwitch: Microsecond})
		var q WaitQueue
		unwound := 0
		e.Go("sleeper", 0, false, func(tk *Task) {
			defer func() { unwound++ }()
			q.Wait(tk, func() bool { return false })
		})
		e.Go("spinner", 1, false, func(tk *Task) {
			defer func() { unwound++ }()
			for {
				tk.Charge(300 * Microsecond)
			}
		})
		e.Go("stopper", 0, false, func(tk *Task) {
			tk.Nanosleep(10 * Millisecond)
			tk.Engine().Stop(ErrStopped)
			tk.Charge(Millisecond) // stopped: never resumed, unwound
		})
		if err := e.Run(); err != ErrStopped {
			t.Fatalf("Run = %v, want %v", err, ErrStopped)
		}
		if unwound != 2 {
			t.Fatalf("%d of 2 tasks ran their deferred code when unwound", unwound)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after 20 stopped runs, %d before", n, before)
	}
}
