package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/calibrate"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/safefile"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newCalibrateCmd) }

func newCalibrateCmd(g *globalOptions) *cobra.Command {
	var out, refit string
	var samples, rounds, check int
	var noNetns, noWorkloads bool
	cmd := &cobra.Command{
		Use:   "calibrate [-o FILE] [--refit REPORT]",
		Short: "Measure this host (grace periods, create and batched-delete costs) and write a cost table for --costs",
		Long: `Measure the host so that the emulated kernel can run "as this host":

  grace-period latency   membarrier(MEMBARRIER_CMD_GLOBAL), many calls, by tick phase
  HZ, CPUs, preemption   kernel configuration, /sys, debugfs (HZ also measured)
  per-device costs       create, and the slope of batched deletes of 100 and 300
                         devices, in a throwaway network namespace (needs root)
  namespace costs        setup, delete and exit of 40 and 200 namespaces with lo
                         up, deleted all at once (--no-netns: skipped)
  a check                a batched delete of 1000 devices (--check N), not
                         fitted: shown against the emulated kernel

One-by-one deletes, veth pairs and namespaces deleted one at a time are never
measured: they are what the emulated kernel must predict. With -o FILE the cost table is written for --costs FILE.

--refit REPORT measures nothing and needs no privileges: it fits the
measurements of a report 'ndst --json calibrate' printed again, with this
ndst's model, and shows each run's closure as recorded and now (how a change
of the model, or of ndst, moves a calibration that was taken earlier).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if refit != "" {
				if err := refuse(setFlags(cmd, []string{"gp-samples", "rounds", "check", "no-netns", "no-workloads", "kind"}),
					"--refit fits a recorded report's measurements again and measures nothing"); err != nil {
					return err
				}
			}
			if samples < 1 || samples > 100000 {
				return ndst.Usagef("--gp-samples must be in 1..100000, got %d", samples)
			}
			if rounds < 1 || rounds > 100 {
				return ndst.Usagef("--rounds must be in 1..100, got %d", rounds)
			}
			if check != 0 && (check <= calibrate.MaxDevices || check > calibrate.MaxCheck) {
				return ndst.Usagef("--check must be 0 (none) or in %d..%d, more than the fitted sizes, got %d", calibrate.MaxDevices+1, calibrate.MaxCheck, check)
			}
			if check == 0 {
				check = -1
			}
			if out != "" {
				// Checked before the measurement: the table replaces only a
				// regular file (never a link or a device) in an existing directory.
				if err := safefile.CheckOutput(out); err != nil {
					return ndst.Usagef("-o %s: %v", out, err)
				}
			}
			ctx, cancel := signalContext()
			defer cancel()
			if refit != "" {
				rep, err := readRefit(ctx, refit)
				if err != nil {
					return err
				}
				return g.finishCalibration(rep, out)
			}
			o := calibrate.Options{
				Kind: g.kind, KindExplicit: g.kindExplicit, GPSamples: samples, Rounds: rounds, Check: check, NoNetns: noNetns, NoWorkloads: noWorkloads,
				Notef: g.note,
			}
			p := g.startProgress("calibrate: measuring this host")
			o.Progress = g.progressLines(p, "calibrate: ")
			rep, err := calibrate.Run(ctx, o)
			p.stop()
			if err != nil {
				if ctx.Err() != nil {
					return errors.New("calibration interrupted; nothing was saved")
				}
				return err
			}
			return g.finishCalibration(rep, out)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the cost table to `FILE` (JSON, for --costs FILE)")
	cmd.Flags().IntVar(&samples, "gp-samples", 200, "number of membarrier calls timed")
	cmd.Flags().BoolVar(&noNetns, "no-netns", false, "do not measure namespaces (the table then has no namespace costs, which ndst predict --netns needs)")
	cmd.Flags().BoolVar(&noWorkloads, "no-workloads", false, "do not measure the workloads' costs (devices with addresses, macvlans and VLANs, namespaces with a veth pair), which ndst predict --workloads needs")
	cmd.Flags().IntVar(&check, "check", 1000, "`N` devices deleted as one batch, more than the fitted sizes, shown against the emulated kernel and never an input (a check of the line fitted through 100 and 300; 0: none)")
	cmd.Flags().StringVar(&refit, "refit", "", "measure nothing: fit the measurements of `REPORT` (what 'ndst --json calibrate' printed) again with this ndst's model, and compare each run's closure with the recorded one")
	cmd.Flags().IntVar(&rounds, "rounds", 15, "measured rounds of creates and batched deletes of each size (after one warm-up round); more on a noisy machine")
	return cmd
}

// finishCalibration writes a calibration's (or a refit's) table and report,
// and fails when its closure does.
func (g *globalOptions) finishCalibration(rep *calibrate.Report, out string) error {
	closed, worst := rep.Closed()
	if !closed {
		// The table says so itself, for whoever loads it later.
		rep.Table.Notes = strings.TrimSpace(rep.Table.Notes + fmt.Sprintf(" This calibration does not close: its emulated kernel misses a calibration run by %.1f%%, so predictions from it are not trustworthy; calibrate again on a quiet machine.", 100*worst))
		if len(rep.Missed) > 0 {
			rep.Table.Notes += " What misses: " + strings.Join(rep.Missed, "; ") + "."
		}
	}
	if out != "" {
		if err := calibrate.Save(rep.Table, out); err != nil {
			return err
		}
		rep.Path = out
	}
	var perr error
	if g.json {
		perr = writeJSON(g.stdout, rep)
	} else {
		perr = rep.WriteText(g.stdout)
	}
	if perr != nil {
		return perr
	}
	// A table whose emulated kernel does not reproduce its own
	// runs is no ground for a prediction: the command fails (the
	// report above says what misses; the table is still written,
	// for a look).
	if !closed {
		return &failedError{fmt.Errorf("calibration does not close: the emulated kernel misses a run by %.1f%%", 100*worst)}
	}
	return nil
}

// maxReport bounds a report read by --refit: a calibration's report is tens
// of kilobytes.
const maxReport = 16 << 20

// readRefit reads and refits a recorded report (calibrate --refit).
func readRefit(ctx context.Context, path string) (*calibrate.Report, error) {
	b, err := safefile.ReadFile(ctx, path, maxReport, safefile.FollowLinks)
	if err != nil {
		return nil, ndst.Usagef("--refit: %v", err)
	}
	rep, err := calibrate.ReadReport(b)
	if err != nil {
		return nil, ndst.Usagef("--refit %s: %v", path, err)
	}
	if err := rep.RefitRecorded(ctx, path); err != nil {
		if ctx.Err() != nil {
			return nil, errors.New("refit interrupted; nothing was saved")
		}
		return nil, ndst.Usagef("--refit %s: %v", path, err)
	}
	return rep, nil
}
