package main

import (
	"fmt"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/ktrace"
	"github.com/ndst-project/ndst/safefile"
)

// startRealTrace begins --trace on the real kernel (package ktrace): the
// scheduler and workqueue tracepoints of every CPU while the command runs.
// The returned finish stops the recording and writes the file (with
// safefile.WriteOutput); a trace that cannot be written fails the command.
// Without --trace, or on the emulated kernel (which traces itself), it does
// nothing.
func (g *globalOptions) startRealTrace() (finish func(*ndst.Result) error, err error) {
	none := func(*ndst.Result) error { return nil }
	if g.trace == "" || g.backend != "netlink" {
		return none, nil
	}
	if err := safefile.CheckOutput(g.trace); err != nil {
		return nil, ndst.Usagef("--trace %s: %v", g.trace, err)
	}
	rec, err := ktrace.Start()
	if err != nil {
		return nil, fmt.Errorf("--trace on the real kernel: the scheduler and workqueue tracepoints cannot be opened: %w", err)
	}
	return func(res *ndst.Result) error {
		rec.Stop()
		werr := safefile.WriteOutput(g.trace, 0o644, rec.Write, nil)
		note := fmt.Sprintf("wrote %s (Chrome trace events of this host's scheduler and workqueues: open it in Perfetto beside an emulated run's --trace)", g.trace)
		if lost := rec.Lost(); lost > 0 {
			note += fmt.Sprintf("; %d records were lost (the rings were full)", lost)
		}
		if werr != nil {
			werr = fmt.Errorf("--trace: %w", werr)
			note = werr.Error()
		}
		if res != nil {
			res.Notes = append(res.Notes, note)
		} else if werr == nil {
			g.note("%s", note)
		}
		if werr != nil && res != nil {
			return &failedError{werr}
		}
		return werr
	}, nil
}
