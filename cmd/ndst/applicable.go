package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// A flag that would do nothing is a usage error, never silently ignored:
// the settings of the emulated kernel given to the real one, the netlink
// backend's given to the emulator, and the global namespace given to the
// commands that work in throwaway namespaces of their own. Only the flags
// the user set count; defaults never do. --state, which only says where the
// emulated registry lives, is refused only where no emulated kernel runs, so
// that scripts may pass it to every emulated command.

// emuFlags are the global settings of the emulated kernel.
var emuFlags = []string{"profile", "strategy", "hz", "cpus", "preempt", "rcu", "seed", "name-alloc", "costs", "state", "watchdog", "hold", "ref-tracker", "trace", "param", "machine"}

// netlinkFlags are the global settings of the real-kernel backends
// (netlink, and module for --netns and the root-namespace flag).
var netlinkFlags = []string{"netns", "kind", "i-really-mean-the-root-namespace", "no-memory-check"}

// benchSimFlags are bench's own list flags that only emulated cells use.
var benchSimFlags = []string{"profile", "strategy", "hz", "cpus", "preempt", "jobs"}

// setFlags returns the names of the flags set on the command line, local
// and inherited, in the order given by names.
func setFlags(cmd *cobra.Command, names []string) []string {
	var out []string
	for _, n := range names {
		set := func(name string) bool { f := cmd.Flags().Lookup(name); return f != nil && f.Changed }
		if (set(n) || n == "netns" && set("ns")) && !slices.Contains(out, n) { // -n is --netns
			out = append(out, n)
		}
	}
	return out
}

// refuse builds the usage error for flags that do not apply, with why.
func refuse(flags []string, why string) error {
	if len(flags) == 0 {
		return nil
	}
	named := make([]string, len(flags))
	for i, f := range flags {
		named[i] = "--" + f
	}
	return ndst.Usagef("%s would be ignored: %s", joinAnd(named), why)
}

func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	if len(s) == 2 {
		return s[0] + " and " + s[1]
	}
	return strings.Join(s[:len(s)-1], ", ") + ", and " + s[len(s)-1]
}

// realTimeout is the wall-time bound of a real-kernel request: --timeout,
// or --give-up, its earlier name on the real kernel (said in a note); 0 for
// the backend's default.
func (g *globalOptions) realTimeout(cmd *cobra.Command) (time.Duration, error) {
	switch {
	case cmd.Flags().Changed("timeout") && cmd.Flags().Changed("give-up"):
		return 0, ndst.Usagef("--timeout and --give-up: on the real kernel give --timeout only (--give-up is the emulated kernel's, in virtual time)")
	case cmd.Flags().Changed("timeout"):
		if g.timeout <= 0 {
			return 0, ndst.Usagef("--timeout must be positive, got %v", g.timeout)
		}
		return g.timeout, nil
	case cmd.Flags().Changed("give-up"):
		if g.giveUp <= 0 {
			return 0, ndst.Usagef("--give-up must be positive, got %v", g.giveUp)
		}
		g.note("note: --give-up on the real kernel is wall time; its name there is --timeout")
		return g.giveUp, nil
	}
	return 0, nil
}

// checkApplicable refuses the flags that cmd would ignore.
func (g *globalOptions) checkApplicable(cmd *cobra.Command) error {
	switch {
	case g.backend == "sim":
		if err := refuse(setFlags(cmd, []string{"timeout"}), "--timeout bounds the real kernel's requests in wall time; the emulated kernel's bound is --give-up, in virtual time"); err != nil {
			return err
		}
	case cmd.Name() != "del" || cmd.Parent() != cmd.Root():
		if err := refuse(setFlags(cmd, []string{"timeout"}), "--timeout bounds the teardown requests of del on the real kernel"); err != nil {
			return err
		}
	}
	if g.json && cmd.HasParent() && cmd.Parent().Name() == "completion" {
		return ndst.Usagef("--json: a completion script is shell code, not JSON")
	}
	if cmd.HasParent() && cmd.Parent().Name() == "netns" {
		return g.checkNetnsCmd(cmd)
	}
	switch cmd.Name() {
	case "add", "del", "list", "reset":
		switch g.backend {
		case "netlink":
			emu := emuFlags
			if cmd.Name() == "del" {
				emu = without(emuFlags, "hold") // --hold socket@DEVICE: a real held reference
			}
			if cmd.Name() == "add" || cmd.Name() == "del" {
				emu = without(emu, "trace") // the real kernel's tracepoints (package ktrace)
			}
			return refuse(setFlags(cmd, emu),
				"--backend netlink runs this host's kernel as it is, not the emulated kernel")
		case "module":
			if cmd.Name() == "reset" {
				return ndst.Usagef("reset does not apply to --backend module: the module's devices are removed with " +
					"'ndst --backend module del START STOP' (deleting their namespace would move them to the host's)")
			}
			if err := refuse(setFlags(cmd, emuFlags),
				"--backend module runs this host's kernel as it is, not the emulated kernel"); err != nil {
				return err
			}
			return refuse(setFlags(cmd, []string{"kind", "no-memory-check"}),
				"the module makes devices of its own kind, and only the netlink backend estimates kernel memory")
		}
		if cmd.Name() == "add" { // --netns NAME: act inside an emulated namespace; --kind ifb: up with a qdisc
			return refuse(setFlags(cmd, without(netlinkFlags, "netns", "kind")),
				"--backend sim (the default) runs the emulated kernel, not the real kernel")
		}
		if cmd.Name() != "reset" { // --netns NAME: act inside an emulated namespace
			return refuse(setFlags(cmd, without(netlinkFlags, "netns")),
				"--backend sim (the default) runs the emulated kernel, not the real kernel")
		}
		return refuse(setFlags(cmd, netlinkFlags),
			"--backend sim (the default) runs the emulated kernel, not the real kernel")
	case "unshare":
		if err := refuse(setFlags(cmd, []string{"netns"}),
			"unshare makes namespaces of its own, unnamed; the netlink backend puts their veth ends in ndst's namespace"); err != nil {
			return err
		}
		if g.backend != "sim" {
			return refuse(setFlags(cmd, emuFlags), "--backend "+g.backend+" runs this host's kernel as it is, not the emulated kernel")
		}
		return refuse(setFlags(cmd, without(netlinkFlags, "netns")),
			"--backend sim (the default) runs the emulated kernel, not the real kernel")
	case "costs":
		if err := refuse(setFlags(cmd, []string{"backend"}), "costs prints the emulated kernel's cost table; it uses no backend"); err != nil {
			return err
		}
		return refuse(setFlags(cmd, without(append(slices.Clone(emuFlags), netlinkFlags...), "costs", "state")),
			"costs only prints the cost table (the built-in one, or --costs FILE)")
	case "churn":
		if on, _ := cmd.Flags().GetBool("netns"); on { // churn --netns: pods, on either backend
			if g.backend != "sim" {
				return refuse(setFlags(cmd, emuFlags), "--backend "+g.backend+" runs this host's kernel as it is, not the emulated kernel")
			}
			return refuse(setFlags(cmd, without(netlinkFlags, "netns")),
				"--backend sim (the default) runs the emulated kernel, not the real kernel")
		}
		return refuse(setFlags(cmd, without(append(slices.Clone(emuFlags), netlinkFlags...), "state")),
			"churn drives its own in-memory registry from real threads, neither the emulated kernel nor the netlink backend")
	case "calibrate":
		if err := refuse(setFlags(cmd, []string{"netns", "i-really-mean-the-root-namespace"}),
			"calibrate measures in a throwaway namespace of its own (ndst-calibrate-PID) and removes it"); err != nil {
			return err
		}
		if g.backend != "netlink" && cmd.Flags().Changed("backend") {
			return ndst.Usagef("calibrate measures this host's kernel through netlink; --backend %s does not apply", g.backend)
		}
		return refuse(setFlags(cmd, emuFlags),
			"calibrate measures this host's kernel and runs no emulated kernel")
	case "predict":
		return g.checkPredict(cmd)
	case "bench":
		return g.checkBench(cmd)
	case "advise":
		return refuse(setFlags(cmd, append(slices.Clone(netlinkFlags), "hold", "trace", "ref-tracker", "name-alloc")),
			"advise runs throwaway emulated kernels of its own (and, with --verify, this host's kernel as it is)")
	}
	return nil
}

func (g *globalOptions) checkPredict(cmd *cobra.Command) error {
	// predict's own --netns (namespace teardown) shadows the global one.
	if err := refuse(setFlags(cmd, []string{"i-really-mean-the-root-namespace"}),
		"predict measures in a throwaway namespace of its own; name it with --predict-netns"); err != nil {
		return err
	}
	// --backend netlink names the real side predict runs anyway (the VM
	// rig passes it to every command); any other backend does not apply.
	if cmd.Flags().Changed("backend") && g.backend != "netlink" {
		return refuse([]string{"backend"}, "predict always runs both backends")
	}
	if err := refuse(setFlags(cmd, []string{"profile", "strategy", "hz", "cpus", "preempt", "rcu", "name-alloc", "watchdog", "machine"}),
		"predict runs throwaway emulated kernels of the 6.18 profile with the HZ, CPUs and preemption of the calibration's host"); err != nil {
		return err
	}
	// --param is a lever: the emulated kernel of one boot's calibration,
	// with the knob set, against a second boot that had it.
	if f := cmd.Flags().Lookup("measured-in"); f == nil || !f.Changed {
		if err := refuse(setFlags(cmd, []string{"param"}),
			"predict emulates the calibrated host as it was; a knob set otherwise is checked with --from-guest WITHOUT --measured-in WITH (scripts/vm-predict.sh --param)"); err != nil {
			return err
		}
	}
	if f := cmd.Flags().Lookup("from-guest"); f != nil && f.Changed {
		return refuse(setFlags(cmd, []string{"kind", "costs", "predict-netns", "runs", "save-costs"}),
			"--from-guest takes the calibration and the measurements from the guest's transcript")
	}
	return nil
}

func (g *globalOptions) checkBench(cmd *cobra.Command) error {
	if err := refuse(setFlags(cmd, []string{"netns", "i-really-mean-the-root-namespace"}),
		"bench runs netlink cells in a throwaway namespace of its own; name it with --bench-netns"); err != nil {
		return err
	}
	backends, _ := cmd.Flags().GetStringSlice("backend")
	if !slices.Contains(backends, "sim") {
		flags := setFlags(cmd, append(slices.Clone(benchSimFlags), without(emuFlags, "state")...))
		return refuse(flags, fmt.Sprintf("--backend %s has no emulated cells", strings.Join(backends, ",")))
	}
	if !slices.Contains(backends, "netlink") {
		netlinkOnly := []string{"kind", "bench-netns"}
		if w, _ := cmd.Flags().GetString("workload"); w != "" {
			netlinkOnly = netlinkOnly[1:] // a workload's emulated devices take --kind
		}
		return refuse(setFlags(cmd, netlinkOnly), "this bench has no netlink cells (add netlink to --backend)")
	}
	return nil
}

func without(names []string, drop ...string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(drop, n) {
			out = append(out, n)
		}
	}
	return out
}
