package stallprobe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// MaxWakeups bounds the samples per pair of CPUs.
const MaxWakeups = 1000

// wakeupPause bounds the random pause before each sample (at least 1 ms,
// so that the sleeper's CPU goes idle).
const wakeupPause = 4 * time.Millisecond

// Wakeups times n wake-ups from each CPU to each other one (see Wakeup);
// nil on one CPU. Each sample waits at most a second for its reader.
func Wakeups(ctx context.Context, n int) ([]Wakeup, error) {
	if n < 1 || n > MaxWakeups {
		return nil, fmt.Errorf("stall probe: %d wake-ups: want 1 to %d", n, MaxWakeups)
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, err
	}
	var out []Wakeup
	for _, from := range cpus {
		for _, to := range cpus {
			if from == to {
				continue
			}
			w, err := wakeups(ctx, from, to, n)
			if err != nil {
				return nil, err
			}
			out = append(out, w)
		}
	}
	return out, nil
}

// wakeups takes n samples from one CPU to another.
func wakeups(ctx context.Context, from, to, n int) (Wakeup, error) {
	w := Wakeup{From: from, To: to}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return w, fmt.Errorf("stall probe: pipe: %w", err)
	}
	defer unix.Close(p[0])
	writeOpen := true
	defer func() {
		if writeOpen {
			unix.Close(p[1])
		}
	}()
	base := time.Now()
	woke := make(chan int64, 1)
	readErr := make(chan error, 1)
	readDone := make(chan struct{})
	// The reader: pinned to to, blocked in read(2) between samples; it
	// ends after n bytes, at an error, or at end of file (the write end
	// closed).
	go func() {
		defer close(readDone)
		runtime.LockOSThread() // never unlocked: the thread ends with it
		if err := pin(to); err != nil {
			readErr <- err
			return
		}
		b := make([]byte, 1)
		for range n {
			m, err := unix.Read(p[0], b)
			if err != nil {
				readErr <- fmt.Errorf("stall probe: read: %w", err)
				return
			}
			if m == 0 {
				return
			}
			woke <- int64(time.Since(base))
		}
	}()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := pin(from); err != nil {
			done <- err
			return
		}
		for range n {
			if ctx.Err() != nil {
				done <- ctx.Err()
				return
			}
			time.Sleep(time.Millisecond + rand.N(wakeupPause))
			t0 := int64(time.Since(base))
			if _, err := unix.Write(p[1], []byte{1}); err != nil {
				done <- fmt.Errorf("stall probe: write: %w", err)
				return
			}
			select {
			case t1 := <-woke:
				w.LatenciesNS = append(w.LatenciesNS, t1-t0)
			case err := <-readErr:
				done <- err
				return
			case <-time.After(time.Second):
				done <- fmt.Errorf("stall probe: a wake-up from CPU %d to CPU %d took over a second", from, to)
				return
			}
		}
		done <- nil
	}()
	err := <-done
	// The reader, if it still waits, sees end of file.
	unix.Close(p[1])
	writeOpen = false
	<-readDone
	return w, err
}

// pin binds the calling locked thread to cpu.
func pin(cpu int) error {
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		return fmt.Errorf("stall probe: pin to CPU %d: %w", cpu, err)
	}
	return nil
}
