//go:build !linux

package stacks

import (
	"errors"
	"time"
)

// DefaultInterval is the sampling period.
const DefaultInterval = time.Millisecond

// Errors saying why a thread cannot be sampled.
var (
	ErrNoStackFile  = errors.New("this system has no /proc/PID/stack")
	ErrNotPermitted = errors.New("reading a thread's kernel stack needs CAP_SYS_ADMIN")
)

// Sampler samples a thread's kernel stack; only Linux has one to read.
type Sampler struct {
	Dropped, Failed int
	CostNS          int64
}

// Start fails: there is no kernel stack to read here.
func Start(pid, tid int, interval time.Duration, clock func() int64) (*Sampler, error) {
	return nil, ErrNoStackFile
}

// SetActive does nothing.
func (s *Sampler) SetActive(bool) {}

// Window does nothing.
func (s *Sampler) Window(Window) {}

// AddOther does nothing.
func (s *Sampler) AddOther(d, cpu int64) {}

// Stop returns an empty accumulator.
func (s *Sampler) Stop() *Acc { return NewAcc() }

// Peek fails: there is no kernel stack to read here.
func Peek(pid, tid, n int, every time.Duration) ([]string, error) { return nil, ErrNoStackFile }

// CPU is -1: nothing is pinned.
func (s *Sampler) CPU() int { return -1 }
