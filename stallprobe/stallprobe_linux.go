package stallprobe

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// fifoPriority is the probe threads' SCHED_FIFO priority: the lowest, so
// that the kernel's own real-time threads (a PREEMPT_RT kernel's interrupt
// threads, rcuc, ktimers) still preempt them and count as what they are.
const fifoPriority = 1

// setup checks o, fills in its defaults and lists the CPUs to probe.
func setup(o Options) (Options, []int, error) {
	o, err := o.withDefaults()
	if err != nil {
		return o, nil, err
	}
	cpus, err := allowedCPUs()
	return o, cpus, err
}

// Run probes every CPU the process may run on, all at once (see the
// package doc).
func Run(ctx context.Context, o Options) (*Result, error) {
	o, cpus, err := setup(o)
	if err != nil {
		return nil, err
	}
	return probe(ctx, o, cpus)
}

// RunEach probes every CPU the process may run on, one at a time, the
// others left idle: in a virtual machine, one busy virtual CPU competes
// for the host's cores with fewer of its own.
func RunEach(ctx context.Context, o Options) (*Result, error) {
	o, cpus, err := setup(o)
	if err != nil {
		return nil, err
	}
	out := &Result{ThresholdNS: int64(o.Threshold)}
	for _, cpu := range cpus {
		r, err := probe(ctx, o, []int{cpu})
		if err != nil {
			return nil, err
		}
		out.Policy = r.Policy
		out.CPUs = append(out.CPUs, r.CPUs...)
	}
	return out, nil
}

// allowedCPUs lists the CPUs of the process's affinity mask.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("stall probe: sched_getaffinity: %w", err)
	}
	var cpus []int
	for i := 0; len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("stall probe: no CPU in the process's affinity mask")
	}
	return cpus, nil
}

// probe spins on each of cpus at once.
func probe(ctx context.Context, o Options, cpus []int) (*Result, error) {
	r := &Result{ThresholdNS: int64(o.Threshold), CPUs: make([]CPU, len(cpus))}
	policies := make([]string, len(cpus))
	errs := make([]error, len(cpus))
	var wg sync.WaitGroup
	for i, cpu := range cpus {
		r.CPUs[i] = CPU{CPU: cpu, Durations: make([]int64, 0, 4096)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Locked and never unlocked: Go ends the thread when the
			// goroutine returns, with its affinity and policy.
			runtime.LockOSThread()
			policies[i], errs[i] = probeCPU(ctx, &r.CPUs[i], o)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.Policy = policies[0]
	return r, nil
}

// probeCPU pins the calling (locked) thread to c.CPU, raises it to
// SCHED_FIFO where permitted, and spins o.Windows windows.
func probeCPU(ctx context.Context, c *CPU, o Options) (string, error) {
	var one unix.CPUSet
	one.Set(c.CPU)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return "", fmt.Errorf("stall probe: pin to CPU %d: %w", c.CPU, err)
	}
	policy := "SCHED_OTHER"
	old, err := unix.SchedGetAttr(0, 0)
	if err == nil && os.Geteuid() == 0 {
		fifo := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: fifoPriority}
		if err := unix.SchedSetAttr(0, &fifo, 0); err == nil {
			policy = fmt.Sprintf("SCHED_FIFO %d", fifoPriority)
			defer unix.SchedSetAttr(0, old, 0) //nolint:errcheck // the thread ends anyway
		} else {
			policy += fmt.Sprintf(" (SCHED_FIFO refused: %v; ordinary tasks that ran on the CPU count as stalls)", err)
		}
	} else {
		policy += " (not root: ordinary tasks that ran on the CPU count as stalls)"
	}
	for w := range o.Windows {
		if ctx.Err() != nil {
			return policy, nil
		}
		if w > 0 {
			time.Sleep(o.Pause)
		}
		spin(c, o.Window, o.Threshold)
	}
	return policy, nil
}
