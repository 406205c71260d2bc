//go:build !linux

package stallprobe

import (
	"context"
	"errors"
)

// Run is Linux only: it pins threads to CPUs with sched_setaffinity.
func Run(ctx context.Context, o Options) (*Result, error) {
	return nil, errors.New("stall probe: needs Linux (sched_setaffinity)")
}

// RunEach is Linux only, as Run.
func RunEach(ctx context.Context, o Options) (*Result, error) { return Run(ctx, o) }

// Wakeups is Linux only, as Run.
func Wakeups(ctx context.Context, n int) ([]Wakeup, error) {
	_, err := Run(ctx, Options{})
	return nil, err
}

// TimerLateness is Linux only, as Run.
func TimerLateness(ctx context.Context, n int) ([]Timer, error) {
	_, err := Run(ctx, Options{})
	return nil, err
}
