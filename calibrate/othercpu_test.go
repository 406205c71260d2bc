package calibrate

import (
	"math"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestOtherShare: other work is the machine's busy time less ndst's own,
// over the CPU time there was, clamped to 0..1; a sample not read gives
// nothing.
func TestOtherShare(t *testing.T) {
	at := time.Unix(1000, 0)
	a := cpuSample{at: at, busy: 10 * time.Second, own: 2 * time.Second, steal: time.Second, cpus: 2, ok: true}
	b := cpuSample{at: at.Add(40 * time.Second), busy: 60 * time.Second, own: 42 * time.Second, steal: 5 * time.Second, cpus: 2, ok: true}
	// 50 s busy, 40 s of it ndst's own and 4 s stolen, over 80 CPU-seconds.
	if s, st, ok := otherShare(a, b); !ok || math.Abs(s-0.125) > 1e-9 || math.Abs(st-0.05) > 1e-9 {
		t.Errorf("otherShare = %.4f, %.4f, %v; want 0.125, 0.05", s, st, ok)
	}
	b.own = 80 * time.Second // rusage ahead of /proc/stat's ticks
	if s, st, ok := otherShare(a, b); !ok || s != 0 || st != 0 {
		t.Errorf("otherShare with more own time than busy = %.4f, %.4f, %v; want 0, 0", s, st, ok)
	}
	if _, _, ok := otherShare(a, cpuSample{at: b.at}); ok {
		t.Error("otherShare with an unread sample: ok")
	}
}

// TestBusyNamesItsMeasure: a report with the CPU accounting is busy only
// beyond busyOtherLimit, whatever its load average (its own threads raise
// that); a report from before it is judged by the load average.
func TestBusyNamesItsMeasure(t *testing.T) {
	quiet, loaded := 0.04, 0.4
	r := &Report{LoadAvg: []string{"0.40 0.7 0.8 1/200 9", "1.30 0.9 0.8 1/200 9"}, OtherCPU: &quiet}
	r.Host.CPUs = 2
	if how, busy := r.busy(); busy || !strings.Contains(how, "other work took 4% of its CPU time") {
		t.Errorf("busy() = %q, %v; want not busy, the share named", how, busy)
	}
	r.OtherCPU = &loaded
	if how, busy := r.busy(); !busy || !strings.Contains(how, "40%") {
		t.Errorf("busy() = %q, %v; want busy at 40%%", how, busy)
	}
	r.OtherCPU = nil
	if how, busy := r.busy(); !busy || !strings.Contains(how, "load average 1.30 on 2 CPUs") {
		t.Errorf("busy() without the accounting = %q, %v; want busy by the load average", how, busy)
	}
}

// TestSampleCPU: on Linux both samples are read and ndst's own CPU time,
// spent between them, is not counted as other work.
func TestSampleCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	a := sampleCPU()
	end := time.Now().Add(300 * time.Millisecond)
	for x := 0; time.Now().Before(end); x++ {
		_ = x * x
	}
	b := sampleCPU()
	if !a.ok || !b.ok || a.cpus < 1 || b.own <= a.own {
		t.Fatalf("samples %+v, %+v: want both read, the CPUs counted and own time spent", a, b)
	}
	s, _, ok := otherShare(a, b)
	t.Logf("other work's share over 300 ms of spinning: %.3f", s)
	if !ok || s > 1 || s < 0 {
		t.Errorf("otherShare = %.3f, %v", s, ok)
	}
}
