package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ndst-project/ndst/churn"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/sysmem"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newChurnCmd) }

// churnJSON is the --json record of a churn run.
type churnJSON struct {
	Op           string  `json:"op"`
	Backend      string  `json:"backend"`
	Threads      int     `json:"threads"`
	Count        int     `json:"count"`
	Seconds      float64 `json:"seconds"`
	Locking      string  `json:"locking"`
	Namespaces   int     `json:"namespaces"`
	Alloc        string  `json:"alloc"`
	WorkNS       int64   `json:"work_ns"`
	Listers      int     `json:"listers"`
	WallNS       int64   `json:"wall_ns"`
	Ops          int64   `json:"ops"`
	Creates      int64   `json:"creates"`
	Destroys     int64   `json:"destroys"`
	OpsPerSec    float64 `json:"ops_per_sec"`
	PerThread    []int64 `json:"per_thread"`
	LockWaitNS   int64   `json:"lock_wait_ns"`
	LockHeldNS   int64   `json:"lock_held_ns"`
	LockHeldFrac float64 `json:"lock_held_frac"`
	HoldPerOpNS  int64   `json:"lock_hold_per_op_ns"`
	CeilingOps   float64 `json:"lock_ceiling_ops_per_sec"`
	Listings     int64   `json:"listings"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	Limit        string  `json:"limit"`
	Result       string  `json:"result"`
	Error        string  `json:"error,omitempty"`
}

func newChurnCmd(g *globalOptions) *cobra.Command {
	var (
		c         churn.Config
		seconds   float64
		maxMemory string
		pods      podChurnFlags
	)
	cmd := &cobra.Command{
		Use:   "churn",
		Short: "Create and destroy devices from many threads for a while and report the throughput",
		Long: `Threads create and destroy devices in an in-memory netdev registry (the
emulated kernel's name and ifindex hash tables and allocators, driven by real
threads under real locks) for -l seconds, each keeping its share of -n devices
alive: while below its share a thread creates a device (lowest free %d name,
next free ifindex), otherwise it destroys its oldest. The report gives the
operations in total, per thread and per second, how long the locks were held
and waited for, and what limited the throughput.

Locking (--locking):
  rtnl   one lock for all namespaces, held across each create and destroy
         with its per-device work (--work), as RTNL is
  netns  the same with one lock per namespace (--namespaces spreads threads)
  split  one lock per namespace held only for the name/ifindex allocation
         and the hash tables; the per-device work runs outside it

The same experiment as a socket-table benchmark ("opensock -t 16 -n 10000000
-l 10"), for devices:
  ndst churn -t 16 -n 100000 -l 10
  ndst churn -t 16 -n 100000 -l 10 --locking split`,
		Args: func(cmd *cobra.Command, args []string) error {
			if on, _ := cmd.Flags().GetBool("netns"); on && len(args) > 0 {
				return ndst.Usagef("churn's --netns is a switch (churn pods, with --rate and --for), not a namespace name: %q is left over", args[0])
			}
			return exactArgs(0, "no arguments; use -t, -n and -l (or --netns --rate R --for T)")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkChurnMode(cmd, &pods); err != nil {
				return err
			}
			if pods.on {
				return g.podChurn(&pods)
			}
			if g.backend != "sim" {
				return ndst.Usagef("churn runs on the emulated registry only (--backend sim), not %q", g.backend)
			}
			if math.IsNaN(seconds) || seconds <= 0 || seconds > churn.MaxDuration.Seconds() {
				return ndst.Usagef("-l/--seconds must be in (0, %g], got %g", churn.MaxDuration.Seconds(), seconds)
			}
			tmpl, err := ndst.ParseTemplate(g.template)
			if err != nil {
				return err
			}
			c.Template = tmpl
			c.Duration = time.Duration(seconds * float64(time.Second))
			if c.MaxMemory, err = parseMaxMemory(maxMemory); err != nil {
				return err
			}
			if err := c.Validate(); err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			p := g.startProgress(fmt.Sprintf("churn: %d threads creating and destroying devices for %v", c.Threads, c.Duration))
			r, runErr := churn.Run(ctx, c)
			p.stop()
			var over *churn.OverMemoryError
			if errors.As(runErr, &over) {
				runErr = fmt.Errorf("%w; lower -n, -t or --namespaces, or raise --max-memory (%s now; 0 turns the bound off)",
					runErr, maxMemory)
			}
			if r == nil {
				return runErr
			}
			if g.json {
				j := churnJSON{
					Op: "churn", Backend: "sim", Threads: c.Threads, Count: c.Count, Seconds: seconds,
					Locking: c.Locking, Namespaces: c.Namespaces, Alloc: c.Alloc, WorkNS: int64(c.Work),
					Listers: c.Listers, WallNS: int64(r.Elapsed), Ops: r.Ops, Creates: r.Creates,
					Destroys: r.Destroys, OpsPerSec: r.OpsPerSec, PerThread: r.PerThread,
					LockWaitNS: int64(r.LockWait), LockHeldNS: int64(r.LockHeld), LockHeldFrac: r.LockHeldFrac,
					HoldPerOpNS: int64(r.HoldPerOp), CeilingOps: r.Ceiling,
					Listings: r.Listings, GOMAXPROCS: r.GOMAXPROCS, Limit: r.Limit(), Result: ndst.ResultOK,
				}
				if runErr != nil {
					j.Result, j.Error = ndst.ResultError, runErr.Error()
				}
				if err := writeJSON(g.stdout, j); err != nil {
					return err
				}
			} else {
				writeChurnText(g.stdout, r)
			}
			if runErr != nil {
				if g.json {
					return &failedError{runErr}
				}
				return runErr
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVarP(&c.Threads, "threads", "t", 4, "threads creating and destroying devices")
	f.IntVarP(&c.Count, "count", "n", 10000, "devices kept alive per namespace (shared by its threads)")
	f.Float64VarP(&seconds, "seconds", "l", 10, "how long to churn, in seconds")
	f.StringVar(&c.Locking, "locking", churn.LockRTNL, "locking: "+strings.Join(churn.Lockings, ", "))
	f.IntVar(&c.Namespaces, "namespaces", 1, "namespaces the threads are spread over (at most --threads: each needs a thread)")
	f.StringVar(&c.Alloc, "alloc", churn.AllocBitmap, "ifindex and name allocator: bitmap, or linear (the naive scan)")
	f.DurationVar(&c.Work, "work", 2*time.Microsecond, "CPU work per create and per destroy beside the registry (device setup, notifiers)")
	f.IntVar(&c.Listers, "listers", 0, "threads listing the devices in pages of 28 throughout")
	f.StringVar(&maxMemory, "max-memory", "auto", "refuse a run estimated to need more memory than this, and stop one that grows past it: a size (512MiB, 4GiB, 4G), 0 for no bound, or auto (80% of the memory available)")
	addPodChurnFlags(cmd, &pods)
	return cmd
}

// parseMaxMemory reads --max-memory: "auto" (80% of what sysmem says is
// available; no bound when that is unknown), "0" (no bound), or a size with
// an optional binary unit (K, M, G, T, with or without "iB"/"B").
func parseMaxMemory(s string) (uint64, error) {
	if s == "auto" {
		if avail, ok := sysmem.Available(); ok {
			return avail / 10 * 8, nil
		}
		return 0, nil
	}
	num := strings.TrimRight(s, "KMGTiBkmgtb")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s[len(num):]), "B"), "I"))
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	v, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) || v*float64(uint64(1)<<sh) >= 1<<63 {
		return 0, ndst.Usagef("--max-memory %q: want a size such as 512MiB, 4GiB or 4G, 0 for no bound, or auto", s)
	}
	return uint64(v * float64(uint64(1)<<sh)), nil
}

func writeChurnText(w io.Writer, r *churn.Result) {
	c := r.Config
	fmt.Fprintf(w, "churn:   %d threads, %d devices per namespace, %d namespace(s), locking %s, alloc %s, work %v per op\n",
		c.Threads, c.Count, c.Namespaces, c.Locking, c.Alloc, c.Work)
	fmt.Fprintf(w, "wall:    %v\n", r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "ops:     %d (%d creates, %d destroys)\n", r.Ops, r.Creates, r.Destroys)
	fmt.Fprintf(w, "rate:    %.0f ops/s, %.0f ops/s per thread\n", r.OpsPerSec, r.OpsPerSec/float64(c.Threads))
	lo, hi := r.PerThread[0], r.PerThread[0]
	for _, n := range r.PerThread {
		lo, hi = min(lo, n), max(hi, n)
	}
	fmt.Fprintf(w, "threads: %d..%d ops each\n", lo, hi)
	fmt.Fprintf(w, "locks:   %d, held %.0f%% of the time, %v per op (ceiling %.0f ops/s); threads waited %v in total (%.0f%% of their time)\n",
		r.Locks, 100*r.LockHeldFrac, r.HoldPerOp, r.Ceiling, r.LockWait.Round(time.Millisecond),
		100*float64(r.LockWait)/(float64(r.Elapsed)*float64(c.Threads)))
	if c.Listers > 0 {
		fmt.Fprintf(w, "lists:   %d complete listings by %d listers\n", r.Listings, c.Listers)
	}
	fmt.Fprintf(w, "limit:   %s\n", r.Limit())
}
