package main

import (
	"io"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newReproduceCmd) }

func newReproduceCmd(g *globalOptions) *cobra.Command {
	var sweep, why bool
	var devices int
	cmd := &cobra.Command{
		Use:   "reproduce-2009",
		Short: "Run the October 2009 experiment on every plausible kernel configuration and compare with the published figures",
		Long: `Run the 2009 experiment (the test module's "echo 1000 > add; echo 1 1000 > del":
1000 down dummy devices on a uniprocessor, non-preemptible kernel at HZ=1000) on the
emulated kernel, once per wait strategy, for each plausible 2.6.31/2.6.32
configuration (Classic or Tree RCU), beside the published figures, and say which
configuration the figures fit. One cost is fitted for the whole table (the
per-device unregister work, to tick's 3.00 s); --sweep prints the evidence.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if devices < 1 || devices > 100000 {
				return ndst.Usagef("--count must be between 1 and 100000, got %d", devices)
			}
			if sweep {
				var us []int64
				for u := int64(500); u <= 3100; u += 100 {
					us = append(us, u*1000)
				}
				pts, err := bench.Sweep2009(ctx, devices, us)
				if err != nil {
					return err
				}
				if g.json {
					return writeJSON(g.stdout, pts)
				}
				return bench.WriteSweep(g.stdout, pts)
			}
			prog := g.startProgress("reproduce-2009: running 7 strategies on 4 configurations")
			tb, err := bench.Reproduce2009(ctx, nil, devices)
			prog.stop()
			if err != nil {
				return err
			}
			if g.json {
				return writeJSON(g.stdout, tb)
			}
			if err := tb.WriteText(g.stdout); err != nil || !why {
				return err
			}
			if _, err := io.WriteString(g.stdout, "\nwhy, cell by cell (each run's own why: lines):\n"); err != nil {
				return err
			}
			return tb.WriteWhy(g.stdout)
		},
	}
	cmd.Flags().BoolVar(&sweep, "sweep", false, "print the evidence for the fitted cost: tick and ben by unregister cost")
	cmd.Flags().BoolVar(&why, "why", false, "also print each cell's own explanation (the why: lines of its del)")
	cmd.Flags().IntVar(&devices, "count", 1000, "devices to add and delete")
	return cmd
}
