package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/kmsg"
	"github.com/ndst-project/ndst/ndst/nlbackend/membarrier"
	"github.com/ndst-project/ndst/ndst/nlbackend/sender"
	"github.com/ndst-project/ndst/ndst/nlbackend/stacks"
	"github.com/ndst-project/ndst/phase"
	"golang.org/x/sys/unix"
)

// A teardown command on the real kernel is watched (see the package doc,
// "Teardown"): its requests that may never return go through the sender
// (package sender), the kernel log is read from the command's start
// (package kmsg), the sender's kernel stack is sampled when asked to
// (package stacks), and a request given up on becomes a stuck result with a
// verdict (verdict.go).

// Bounds of a watch.
const (
	maxKernelLines = 256 // kernel log lines attached to one result
	kmsgBatch      = 1024
	gpSamples      = 5 // membarrier calls for the verdict
	gpTimeout      = 2 * time.Second
	peeks          = 20 // stack readings of a request given up on
	peekEvery      = 10 * time.Millisecond
)

// kmsgPath is the kernel log; tests point it elsewhere.
var kmsgPath = kmsg.Path

type watch struct {
	b   *Backend
	res *ndst.Result
	snd *sender.Sender
	smp *stacks.Sampler
	kernelLog

	busy int64 // time inside requests
	// stuck is the request given up on ("" when none): what it deleted,
	// and since when.
	stuck    string
	stuckFor time.Duration
	// inFlight is the devices of the request an interruption left inside
	// the kernel (the sender gave up waiting for its reply), and what it
	// deleted: the kernel finishes it regardless.
	inFlight     int
	inFlightWhat string
}

// startWatch starts watching a teardown command whose result is res.
func (b *Backend) startWatch(res *ndst.Result, attribute bool) (*watch, error) {
	w := &watch{b: b, res: res, kernelLog: b.openKernelLog(res)}
	snd, err := b.sender()
	if err != nil {
		w.close()
		return nil, err
	}
	w.snd = snd
	if attribute {
		smp, err := stacks.Start(snd.PID, snd.TID, 0, snd.CPUClock)
		if err != nil {
			b.notef(res, "--attribute: %v; the delete runs without attribution", err)
		} else {
			w.smp = smp
		}
	}
	return w, nil
}

// sender returns the backend's sender, starting it on first use with a
// netlink socket of its own in the namespace, and the namespace itself.
func (b *Backend) sender() (*sender.Sender, error) {
	if b.snd != nil && b.snd.Broken() == nil {
		return b.snd, nil
	}
	if b.snd != nil {
		b.snd.Close()
		b.snd = nil
	}
	c, err := dialAt(b.ns)
	if err != nil {
		return nil, fmt.Errorf("open a netlink socket in namespace %s: %w", b.o.Netns, err)
	}
	nsfd, err := unix.FcntlInt(uintptr(b.ns), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		c.close()
		return nil, err
	}
	sock, ns := os.NewFile(uintptr(c.fd), "netlink"), os.NewFile(uintptr(nsfd), "netns")
	snd, err := sender.Start([]*os.File{sock, ns})
	sock.Close()
	ns.Close()
	if err != nil {
		return nil, err
	}
	if snd.InProcess {
		b.log.Debug("sender runs in process: " + snd.Fallback)
	}
	b.snd = snd
	return snd, nil
}

// Files of the sender, as sender() passes them.
const (
	senderSocket = 0
	senderNetns  = 1
)

// call hands one request to the sender, waiting at most giveUp; running is
// the phase of its CPU work, what names what it deletes for a stuck report.
func (w *watch) call(ctx context.Context, q sender.Request, giveUp time.Duration, running, what string, n int) (sender.Reply, error) {
	if w.smp != nil {
		w.smp.SetActive(true)
	}
	r, err := w.snd.Call(ctx, q, giveUp, w.read)
	if w.smp != nil {
		w.smp.SetActive(false)
	}
	switch {
	case err == nil:
		w.busy += r.T1 - r.T0
		if w.smp != nil {
			w.smp.Window(stacks.Window{T0: r.T0, T1: r.T1, CPU0: r.CPU0, CPU1: r.CPU1, Running: running})
		}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		w.inFlight, w.inFlightWhat = n, what
	case errors.Is(err, sender.ErrGaveUp):
		now := sender.Monotonic()
		w.busy += now - w.snd.Sent
		w.stuck, w.stuckFor = what, time.Duration(now-w.snd.Sent)
		if w.smp != nil {
			w.smp.Window(stacks.Window{T0: w.snd.Sent, T1: now, CPU0: w.snd.SentCPU, CPU1: w.snd.CPUClock(), Running: running})
		}
	}
	w.read()
	return r, err
}

// close releases the watch's descriptors and threads.
func (w *watch) close() {
	w.kernelLog.close()
	if w.smp != nil {
		w.smp.Stop()
		w.smp = nil
	}
}

// finish completes the result once the command's requests are done (err
// is the command's error): the kernel log lines, the phases, and for a
// request given up on the stuck result and its verdict, returned as an
// error wrapping ndst.ErrStuck.
func (w *watch) finish(err error) error {
	res := w.res
	w.attach(res)
	if w.smp != nil {
		acc := w.smp.Stop()
		cost := w.smp.CostNS
		res.Stacks = map[string]int64{}
		for k, n := range w.smp.Folded() {
			res.Stacks[k] = n * int64(w.smp.Interval())
		}
		w.smp = nil
		acc.AddOther(res.WallNS-w.busy, 0)
		res.Phases = acc.Phases()
		if res.Counters == nil {
			res.Counters = map[string]int64{}
		}
		res.Counters["stack_samples"] = int64(acc.SampleCount())
		res.Counters["sampler_cpu_ns"] = cost
		res.Notes = append(res.Notes, attributionNote(acc, w.snd))
		if e := attributionExplain(res, acc); e != "" {
			res.Explain = append(res.Explain, e)
		}
	}
	w.close()
	if w.stuck == "" {
		return err
	}
	return w.giveUp()
}

// giveUp turns the result into a stuck one, with the verdict.
func (w *watch) giveUp() error {
	res := w.res
	e := evidence{waited: w.stuckFor, waiting: w.nwait}
	if ph, err := stacks.Peek(w.snd.PID, w.snd.TID, peeks, peekEvery); err == nil {
		e.state = state(ph)
	}
	e.gp, e.gpSamples, e.gpErr = graceLatency(w.b.Host())
	res.Verdict = judge(e)
	res.Stuck = w.stuckDevices()
	res.Result = ndst.ResultStuck
	named := w.named()
	res.Error = fmt.Sprintf("gave up after %s waiting for the kernel to delete %s; %s; verdict %s",
		dur(w.stuckFor), w.stuck, named, res.Verdict.Kind)
	res.Explain = append(res.Explain, res.Verdict.Why)
	res.Notes = append(res.Notes, fmt.Sprintf("the kernel has unregistered %s and frees each device once its references are gone; the request stays with it (sender process %d ends when it returns)", w.stuck, w.snd.PID))
	return fmt.Errorf("%w: %s", ndst.ErrStuck, res.Error)
}

// graceLatency measures the host's grace period now, bounded: a host whose
// grace periods have stalled gets the bound as its figure's floor. On one
// CPU membarrier returns at once (there is no other CPU to wait for) and a
// grace period ends at the CPU's next context switch or tick: its figure is
// one jiffy, with no samples.
func graceLatency(h HostFacts) (time.Duration, int, string) {
	if h.CPUs == 1 {
		if h.HZ <= 0 {
			return 0, 0, "one CPU, and HZ unknown"
		}
		return time.Second / time.Duration(h.HZ), 0, ""
	}
	type result struct {
		l   membarrier.Latency
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := membarrier.Measure(gpSamples)
		ch <- result{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return 0, 0, r.err.Error()
		}
		return r.l.Median(), len(r.l.Samples), ""
	case <-time.After(gpTimeout):
		return gpTimeout, 1, ""
	}
}

// attributionNote says where the phases come from.
func attributionNote(acc *stacks.Acc, snd *sender.Sender) string {
	who := fmt.Sprintf("sender process %d", snd.PID)
	if snd.InProcess {
		who = fmt.Sprintf("sending thread %d", snd.TID)
	}
	s := fmt.Sprintf("phases from %d samples of the %s's kernel stack at %.0f Hz over %s",
		acc.SampleCount(), who, float64(time.Second)/float64(stacks.DefaultInterval), plural(acc.Windows, "request"))
	if acc.Unsampled > 0 {
		s += fmt.Sprintf(" (%d too short for a sample: their waiting is 'other')", acc.Unsampled)
	}
	return s
}

// attributionExplain is the sentence under a result that names the phase
// the devices spent most of the kernel's time in, as the emulated kernel's
// explanation does, and what ndst itself took between the requests.
func attributionExplain(res *ndst.Result, acc *stacks.Acc) string {
	if res.Count == 0 || acc.TotalNS == 0 {
		return ""
	}
	type share struct {
		name string
		ns   int64
	}
	var ph []share
	for _, p := range phase.All {
		if ns := acc.Kernel(p); ns > 0 {
			ph = append(ph, share{p, ns})
		}
	}
	if len(ph) == 0 {
		return ""
	}
	slices.SortStableFunc(ph, func(a, b share) int { return int(b.ns - a.ns) })
	unit, n := "each device", int64(res.Count)
	if res.Batched {
		unit, n = "the batch", 1
	}
	pct := func(ns int64) float64 { return 100 * float64(ns) / float64(acc.TotalNS) }
	s := fmt.Sprintf("real kernel: %s spent %s in %s, %.0f%% of its %s in the kernel", unit, dur(time.Duration(ph[0].ns/n)),
		phase.Describe(ph[0].name), pct(ph[0].ns), dur(time.Duration(acc.TotalNS/n)))
	if len(ph) > 1 {
		s += fmt.Sprintf("; next, %s %.0f%%", ph[1].name, pct(ph[1].ns))
	}
	if acc.OutsideNS > 0 {
		s += fmt.Sprintf(" (ndst's own time between requests: %s)", dur(time.Duration(acc.OutsideNS/n)))
	}
	return s
}
