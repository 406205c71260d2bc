package stacks

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst/nlbackend/membarrier"
	"github.com/ndst-project/ndst/phase"
	"golang.org/x/sys/unix"
)

// TestSamplerGracePeriods samples a thread of this process that waits in
// membarrier(MEMBARRIER_CMD_GLOBAL), that is in synchronize_rcu(): most of
// its time must come out as synchronize_net, and the phases must sum to
// the window.
func TestSamplerGracePeriods(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reading a thread's kernel stack needs root")
	}
	call, err := membarrier.Global()
	if err != nil {
		t.Skipf("membarrier: %v", err)
	}
	tids := make(chan int)
	res := make(chan Window)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tids <- unix.Gettid()
		<-tids
		w := Window{T0: monotonic(), CPU0: threadCPU(), Running: phase.Other}
		for range 20 {
			_ = call()
		}
		w.T1, w.CPU1 = monotonic(), threadCPU()
		res <- w
	}()
	tid := <-tids
	clock := func() int64 {
		var ts unix.Timespec
		_ = unix.ClockGettime(int32(^uint32(tid)<<3)|6, &ts) // the thread's CPU clock
		return ts.Nano()
	}
	s, err := Start(os.Getpid(), tid, 0, clock)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	s.SetActive(true)
	tids <- 0
	w := <-res
	s.SetActive(false)
	s.Window(w)
	acc := s.Stop()
	var sum, sync int64
	for _, p := range acc.Phases() {
		sum += p.TotalNS()
		if p.Name == phase.SyncNet {
			sync = p.TotalNS()
		}
	}
	if sum != w.T1-w.T0 || acc.SampleCount() < 10 {
		t.Fatalf("phases %+v sum to %d from %d samples; want %d from at least 10", acc.Phases(), sum, acc.SampleCount(), w.T1-w.T0)
	}
	if float64(sync) < 0.8*float64(sum) {
		t.Errorf("synchronize_net has %v of %v (%+v); want most of it: membarrier waits in synchronize_rcu()", time.Duration(sync), time.Duration(sum), acc.Phases())
	}
	if s.CostNS <= 0 {
		t.Errorf("sampler cost %d, want its CPU time", s.CostNS)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(os.Getpid(), 1<<30, 0, threadCPU); err == nil || errors.Is(err, ErrNotPermitted) {
		t.Errorf("Start(no such thread) = %v, want an error saying it is gone", err)
	}
}
