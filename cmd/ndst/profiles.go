package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/ndst-project/ndst/netdev"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newProfilesCmd) }

// profileJSON is one line as `ndst --json profiles` prints it.
type profileJSON struct {
	Name       string          `json:"name"`
	Changes    []changeJSON    `json:"changes"`
	RCU        []string        `json:"rcu"`
	Strategy   string          `json:"default_strategy"`
	Batched    bool            `json:"batched"`
	SyncNet    int             `json:"synchronize_net_per_unregister"`
	Ready      int             `json:"ready_refcount"`
	Holders    []string        `json:"rcu_released_holders"`
	Timers     string          `json:"timer_wheel"`
	LockupSecs int64           `json:"soft_lockup_s"`
	Extra      map[string]bool `json:"path"`
}

type changeJSON struct {
	Commit  string `json:"commit,omitempty"`
	Release string `json:"release"`
	Title   string `json:"title"`
	Effect  string `json:"effect"`
}

func newProfilesCmd(g *globalOptions) *cobra.Command {
	var knobs bool
	cmd := &cobra.Command{
		Use:   "profiles",
		Short: "List the kernel lines the emulated kernel models, each as the previous one plus its sourced changes",
		Long: `List the kernel lines (--profile): each is the previous line plus named changes to the
teardown path, RCU or the scheduler, with the commit, the first release that has it,
and what it changes in the model. The sources are in docs/kernel-2.6-sources.md and
docs/kernel-modern-sources.md. --profile auto picks the line of a kernel release.

With --knobs: the kernel's own knobs (--param NAME=VALUE) by line: the value each has
during a run on the machine of --hz, --cpus and --preempt, the release and commit each
came in, its file on a running kernel, whether it changes at run time, at boot or only
in another build, what it does and what it costs elsewhere.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if knobs {
				m := knobsMachine{HZ: g.hz, CPUs: g.cpus, Preempt: g.preempt, Defaulted: !g.preemptSet}
				if g.json {
					cat, err := knobCatalogue(m)
					if err != nil {
						return err
					}
					return writeJSON(g.stdout, struct {
						Machine knobsMachine `json:"machine"`
						Knobs   []knobJSON   `json:"knobs"`
					}{m, cat})
				}
				return writeKnobs(g.stdout, m)
			}
			if g.json {
				var out []profileJSON
				for _, name := range netdev.ProfileNames {
					out = append(out, toProfileJSON(netdev.Profiles[name]))
				}
				return writeJSON(g.stdout, out)
			}
			var b strings.Builder
			tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "line\tunregister path\twait loop\tready at\tRCU (default first)\ttimers\tsoft lockup")
			for _, name := range netdev.ProfileNames {
				p := netdev.Profiles[name]
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%v\n", p.Name, pathOf(p), p.DefaultStrategy, p.ReadyRefcount,
					strings.Join(rcuNames(p), ", "), p.Timers, p.Lockup)
			}
			tw.Flush()
			b.WriteString("\nchanges, line by line (commit, first release, what changes in the model):\n")
			for _, name := range netdev.ProfileNames {
				p := netdev.Profiles[name]
				if len(p.Changes) == 0 {
					fmt.Fprintf(&b, "\n%s: the base line (2.6.31.14 as read; see docs/kernel-2.6-sources.md)\n", p.Name)
					continue
				}
				fmt.Fprintf(&b, "\n%s:\n", p.Name)
				for _, c := range p.Changes {
					id := c.Commit
					switch {
					case id == "" && strings.HasPrefix(c.Title, "Debian's configuration"):
						id = "(no commit)"
					case id == "":
						id = "(not found)" // the change is sourced; its commit id is not
					}
					fmt.Fprintf(&b, "  %-13s %-6s %s\n  %19s %s\n", id, c.Release, c.Title, "", c.Effect)
				}
			}
			b.WriteString("\nthe kernel's own knobs of each line (--param NAME=VALUE), with their defaults and sources: ndst profiles --knobs\n")
			_, err := fmt.Fprint(g.stdout, b.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&knobs, "knobs", false, "list the kernel's knobs by line, with their defaults, sources and costs")
	return cmd
}

func rcuNames(p netdev.Profile) []string {
	var l []string
	for _, c := range p.RCUs {
		l = append(l, c.Name)
	}
	return l
}

// pathOf summarises a line's unregister path.
func pathOf(p netdev.Profile) string {
	var parts []string
	if p.Batched {
		parts = append(parts, "batched")
	} else {
		parts = append(parts, "per device")
	}
	n := p.SyncNetPerUnregister
	if p.SyncNetInClose {
		n++
	}
	exp := ""
	if p.SyncNetExpedited {
		exp = " expedited"
	}
	parts = append(parts, fmt.Sprintf("%d%s synchronize_net", n, exp))
	if p.BarrierBeforePut {
		parts[len(parts)-1] = fmt.Sprintf("%d%s synchronize_net + rcu_barrier", n-1, exp)
	}
	if p.BarrierInRunTodo {
		parts = append(parts, "rcu_barrier in run_todo")
	}
	return strings.Join(parts, ", ")
}

func toProfileJSON(p netdev.Profile) profileJSON {
	out := profileJSON{Name: p.Name, RCU: rcuNames(p), Strategy: p.DefaultStrategy, Batched: p.Batched,
		SyncNet: p.SyncNetPerUnregister, Ready: p.ReadyRefcount, Timers: p.Timers.String(), LockupSecs: int64(p.Lockup.Seconds()),
		Extra: map[string]bool{"synchronize_net_expedited": p.SyncNetExpedited, "synchronize_net_in_close": p.SyncNetInClose,
			"barrier_before_put": p.BarrierBeforePut, "barrier_in_run_todo": p.BarrierInRunTodo, "free_in_ready_order": p.FreeInReadyOrder}}
	for _, s := range p.Subsystems {
		if s.Release == netdev.ReleaseRCU {
			out.Holders = append(out.Holders, s.Holder.String())
		}
	}
	for _, c := range p.Changes {
		out.Changes = append(out.Changes, changeJSON{c.Commit, c.Release, c.Title, c.Effect})
	}
	return out
}
