package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/ndst-project/ndst/advise"
	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/knobset"
	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// advise --verify: the runtime levers advise found, measured on this host's
// kernel without and with each (bench.Verify), with every knob put back on
// every way out: after each run with the lever; when the measurement ends or
// fails; on SIGINT and SIGTERM (at once, from the signal, while the
// measurement stops); and while a panic unwinds (the deferred Close). A
// SIGKILL or a crash leaves knobset's restore record, which the next ndst
// command applies first (restorePendingKnobs). Each change and each restore
// is printed on stderr as it is made.

// hostVerifier is advise's Verifier on this host.
type hostVerifier struct {
	g    *globalOptions
	runs int
	// last is the verification of the last Verify, for the text output.
	mu   sync.Mutex
	last *bench.Verification
}

// addVerifier gives advise its --verify-runs flag and registers the host's
// Verifier for g.
func addVerifier(g *globalOptions, cmd *cobra.Command) *hostVerifier {
	v := &hostVerifier{g: g}
	cmd.Flags().IntVar(&v.runs, "verify-runs", 1, "with --verify: real runs without and with each lever, alternately (the medians are shown)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if on, _ := cmd.Flags().GetBool("verify"); !on && cmd.Flags().Changed("verify-runs") {
			return ndst.Usagef("--verify-runs goes with --verify")
		}
		return nil
	}
	advise.RegisterVerifier(v)
	return v
}

// Check implements advise.Verifier: nothing is measured off Linux, without
// root, with --verify-runs out of range or a workload too large to run.
func (v *hostVerifier) Check(a *advise.Advice) error {
	switch {
	case runtime.GOOS != "linux":
		return errors.New("it sets this kernel's knobs, which needs Linux; nothing was changed")
	case os.Geteuid() != 0:
		return fmt.Errorf("it sets kernel knobs and creates network namespaces: it needs root (running as uid %d); nothing was changed", os.Geteuid())
	case v.runs < 1 || v.runs > 100:
		return fmt.Errorf("--verify-runs %d: want 1..100", v.runs)
	}
	return workloadOf(a.Workload).Check()
}

// workloadOf is advise's workload as bench.Verify runs it.
func workloadOf(w advise.Workload) bench.Workload {
	if w.Namespaces > 0 {
		return bench.Workload{Namespaces: w.Namespaces, Veth: w.Veth, LoUp: w.LoUp, OneByOne: w.OneByOne}
	}
	return bench.Workload{Devices: w.Devices, OneByOne: w.OneByOne}
}

// runtimeLevers are a's levers this kernel may change at runtime, in the
// order advise ranks them: those that save time, then those without
// effect, then those that cost time.
func runtimeLevers(a *advise.Advice) []*advise.Lever {
	var out []*advise.Lever
	for _, group := range []*[]advise.Lever{&a.Levers, &a.NoEffect, &a.Slower} {
		for i := range *group {
			if l := &(*group)[i]; l.RuntimeSettable && l.Path != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// Verify implements advise.Verifier.
func (v *hostVerifier) Verify(ctx context.Context, a *advise.Advice) error {
	ls := runtimeLevers(a)
	var levers []bench.Lever
	for _, l := range ls {
		name, _, _ := strings.Cut(l.Setting, "=")
		levers = append(levers, bench.Lever{Name: name, Path: l.Path, Value: l.Value, PredictedBeforeNS: l.BeforeNS, PredictedAfterNS: l.AfterNS})
	}
	if len(levers) == 0 {
		return nil
	}
	var changes []string
	ver, err := v.g.verifyLevers(ctx, workloadOf(a.Workload), levers, v.runs, func(line string) { changes = append(changes, line) })
	if ver != nil {
		for i, r := range ver.Rows {
			m := &advise.Measurement{BeforeNS: r.MeasuredBeforeNS, AfterNS: r.MeasuredAfterNS, Skipped: r.Skipped,
				BeforeRunsNS: r.MeasuredBeforeRuns, AfterRunsNS: r.MeasuredAfterRuns, IdleShare: r.IdleShare}
			for _, c := range changes {
				if strings.Contains(c, "("+r.Path+")") {
					m.Changes = append(m.Changes, c)
				}
			}
			if r.Skipped == "" {
				m.Notes = append(m.Notes, verdict(r))
			}
			ls[i].Measured = m
		}
		v.mu.Lock()
		v.last = ver
		v.mu.Unlock()
	}
	return err
}

// verdict is a measured row in words: the error with the lever and whether
// its effect has the measured sign.
func verdict(r bench.VerifyRow) string {
	sign := fmt.Sprintf("the effect's sign is right: %s (a change within ±%.0f%% counts as none)", r.MeasuredEffect, 100*r.Threshold)
	if !r.SignRight {
		sign = fmt.Sprintf("the effect's sign is WRONG: measured %s, predicted %s (a change within ±%.0f%% counts as none)", r.MeasuredEffect, r.PredictedEffect, 100*r.Threshold)
	}
	idle := ""
	if r.IdleShare >= 0 {
		idle = fmt.Sprintf("; the CPUs were %.0f%% idle during the timed teardowns", 100*r.IdleShare)
	}
	return fmt.Sprintf("the prediction with it is off by %+.1f%%; %s%s", 100*r.Error, sign, idle)
}

// writeVerification prints the last verification's table (text output).
func (v *hostVerifier) writeVerification(a *advise.Advice) error {
	v.mu.Lock()
	ver := v.last
	v.mu.Unlock()
	if ver == nil || !a.Verified {
		return nil
	}
	fmt.Fprintln(v.g.stdout)
	return ver.WriteTable(v.g.stdout)
}

// verifyLevers measures levers for workload w on the real kernel; every
// change and restore is told to record as well as printed.
func (g *globalOptions) verifyLevers(ctx context.Context, w bench.Workload, levers []bench.Lever, runs int, record func(string)) (v *bench.Verification, err error) {
	notef := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		record(line)
		fmt.Fprintln(g.stderr, "ndst: advise --verify: "+line)
	}
	sess, err := knobset.Begin(knobset.Options{Command: "advise --verify", Notef: notef})
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	defer close(done)
	// On SIGINT or SIGTERM (ctx is the command's signal context) the knobs
	// go back at once, whatever the measurement is doing; it stops as its
	// own waits see ctx.
	go func() {
		select {
		case <-ctx.Done():
			select {
			case <-done: // the measurement had ended
				return
			default:
			}
			notef("interrupted: putting the knobs back")
			_ = sess.Close()
		case <-done:
		}
	}()
	// Also while a panic unwinds.
	defer func() {
		if cerr := sess.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("putting the knobs back: %w (the restore record %s/knobs-restore.json is kept; the next ndst command tries again)", cerr, knobset.Dir))
		}
	}()
	o := g.nlOptions()
	o.Netns = fmt.Sprintf("ndst-advise-%d", os.Getpid())
	prog := g.startProgress("advise --verify: measuring the levers on the real kernel")
	v, err = bench.Verify(ctx, &bench.VerifySpec{Workload: w, Levers: levers, Runs: runs, Netlink: o,
		Knobs: sess, Check: knobset.Check, Progress: g.progressLines(prog, "advise --verify: ")})
	prog.stop()
	if ctx.Err() != nil {
		return v, errors.New("advise --verify interrupted; the knobs were put back and the throwaway namespace removed")
	}
	return v, err
}
