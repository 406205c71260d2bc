package stallprobe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// timerSpread spreads the deadlines over more than a tick period (at least
// 1 ms ahead, so that the CPU goes idle before it), so that they fall at
// every phase of the tick.
const timerSpread = 5 * time.Millisecond

// TimerLateness times n timer wake-ups on each CPU in turn, the others
// idle: a thread pinned to it, with a timer slack of 1 ns
// (PR_SET_TIMERSLACK), sleeps with clock_nanosleep(TIMER_ABSTIME) to a
// deadline 1 to 6 ms ahead and reads the clock when it runs again. How late
// it runs is the timer interrupt's lateness plus the wake-up of a thread on
// its own CPU: microseconds on hardware; under software emulation, the
// emulator's delay in raising the virtual CPU's timer interrupt, which the
// spinning probe never sees (its virtual CPU runs on; only the interrupt is
// late). Each sample waits at most a second.
func TimerLateness(ctx context.Context, n int) ([]Timer, error) {
	if n < 1 || n > MaxTimerSamples {
		return nil, fmt.Errorf("stall probe: %d timer samples: want 1 to %d", n, MaxTimerSamples)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	var out []Timer
	for _, c := range cpus {
		res := make(chan Timer, 1)
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with it
			tm, err := timerSamples(ctx, c, n)
			if err != nil {
				errc <- err
				return
			}
			res <- tm
		}()
		select {
		case tm := <-res:
			out = append(out, tm)
		case err := <-errc:
			return nil, err
		}
	}
	return out, nil
}

// timerSamples takes n samples on the calling locked thread, pinned to cpu.
func timerSamples(ctx context.Context, cpu, n int) (Timer, error) {
	tm := Timer{CPU: cpu}
	if err := pin(cpu); err != nil {
		return tm, err
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return tm, fmt.Errorf("stall probe: PR_SET_TIMERSLACK: %w", err)
	}
	for range n {
		if err := ctx.Err(); err != nil {
			return tm, err
		}
		var now unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
			return tm, fmt.Errorf("stall probe: clock_gettime: %w", err)
		}
		target := now.Nano() + int64(time.Millisecond+rand.N(timerSpread))
		ts := unix.NsecToTimespec(target)
		for {
			err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
			if err == nil {
				break
			}
			if !errors.Is(err, unix.EINTR) {
				return tm, fmt.Errorf("stall probe: clock_nanosleep: %w", err)
			}
		}
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
			return tm, fmt.Errorf("stall probe: clock_gettime: %w", err)
		}
		late := now.Nano() - target
		if late > int64(time.Second) {
			return tm, fmt.Errorf("stall probe: a timer on CPU %d ran %v late, over a second", cpu, time.Duration(late))
		}
		tm.LatenessNS = append(tm.LatenessNS, max(0, late))
	}
	return tm, nil
}
