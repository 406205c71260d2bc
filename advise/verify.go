package advise

import (
	"context"
	"fmt"
	"strings"
)

// Measuring levers on the real kernel (ndst advise --verify) is the job of
// a Verifier, registered from a file of its own (it writes the host's
// knobs and must restore them on every exit path). This package only says
// what a measurement needs and where its answer goes:
//   - the levers to measure are those with RuntimeSettable set, each with
//     Path (the file to write), Value (what to write) and Current (the
//     value before, to restore);
//   - the workload is Advice.Workload, to be run on the real kernel the
//     same way before and after each change (the netlink backend, in a
//     namespace of ndst's own);
//   - the answer goes to Lever.Measured, and Advice.Verified is set once
//     a Verifier ran; the text and JSON outputs then show the measured
//     times beside the predicted ones.

// Measurement is one lever measured on the real kernel.
type Measurement struct {
	// BeforeNS and AfterNS are the workload's measured times without and
	// with the lever.
	BeforeNS int64 `json:"before_ns"`
	AfterNS  int64 `json:"after_ns"`
	// BeforeRunsNS and AfterRunsNS are the runs the times are the medians
	// of (how far they spread is what a comparison can resolve).
	BeforeRunsNS []int64 `json:"before_runs_ns,omitempty"`
	AfterRunsNS  []int64 `json:"after_runs_ns,omitempty"`
	// IdleShare is the share of all CPUs' time that was idle while the
	// runs' teardowns were timed (-1: unknown).
	IdleShare float64 `json:"idle_share"`
	// Skipped says why the lever was not measured (a read-only file, a
	// container, ...); the times are then zero.
	Skipped string `json:"skipped,omitempty"`
	// Changes are the writes made and undone, as the Verifier printed them.
	Changes []string `json:"changes,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

func (m *Measurement) describe() string {
	if m.Skipped != "" {
		return "skipped: " + m.Skipped
	}
	s := fmt.Sprintf("%s → %s on this host's kernel", dur(m.BeforeNS), dur(m.AfterNS))
	if len(m.Notes) > 0 {
		s += " (" + strings.Join(m.Notes, "; ") + ")"
	}
	return s
}

// Verifier measures the runtime levers of an advice on the real kernel.
type Verifier interface {
	// Check says why verification cannot run here (not root, not Linux,
	// no such files), before anything is changed; nil when it can.
	Check(a *Advice) error
	// Verify measures every RuntimeSettable lever of a.Levers (and may
	// measure those of a.NoEffect and a.Slower), filling Lever.Measured,
	// restoring each knob before it returns on every path.
	Verify(ctx context.Context, a *Advice) error
}

var verifier Verifier

// RegisterVerifier installs the Verifier (from an init function).
func RegisterVerifier(v Verifier) { verifier = v }

// ErrNoVerifier is returned by Verify when this build has no Verifier.
var ErrNoVerifier = fmt.Errorf("this build of ndst cannot measure levers on the real kernel (no verifier)")

// CheckVerify says whether --verify can run for a, changing nothing.
func CheckVerify(a *Advice) error {
	if verifier == nil {
		return ErrNoVerifier
	}
	return verifier.Check(a)
}

// Verify measures a's runtime levers with the registered Verifier.
func Verify(ctx context.Context, a *Advice) error {
	if verifier == nil {
		return ErrNoVerifier
	}
	if err := verifier.Check(a); err != nil {
		return err
	}
	if err := verifier.Verify(ctx, a); err != nil {
		return err
	}
	a.Verified = true
	return nil
}
