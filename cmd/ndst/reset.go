package main

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/statefile"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newResetCmd) }

func newResetCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reset",
		Short: "Forget every device: remove the emulated state file, or everything ndst made on the real kernel",
		Long: `With --backend sim (the default), remove the emulated registry's state file
(taking its lock first, so a running ndst is not disturbed). This is also the
fix for a corrupt state file, which is kept as FILE.corrupt. Only ndst's own
state file is touched: any other file, a directory, a link or a device named
by --state is refused and left alone.
With --backend netlink, remove what ndst made on the real kernel, and only
that: in ndst's namespace (--netns) its own devices, waiting until they are
gone, then the namespace, unless it holds devices someone else made there
(they are named, and the namespace kept); every other namespace of ndst's
(netns add, and those an interrupted calibrate, predict or bench left), unless
an ndst still at work holds it; and what an ndst killed mid-way left (an
ownership record without its namespace, an empty file under /run/netns with a
record). A --netns that ndst did not create is refused. The host's root
namespace is never touched.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if g.backend == "netlink" {
				p := g.startProgress(fmt.Sprintf("reset: deleting namespace %s and waiting for its devices to go", g.netns))
				rep, err := nlbackend.ResetAll(ctx, g.nlOptions())
				p.stop()
				if err != nil && (rep == nil || rep.Error == "") {
					return err
				}
				// A reset that did part of its work (a namespace kept for
				// someone else's devices) reports what it did, then fails.
				if g.json { // the report has op, backend, netns and result, and what was deleted
					if werr := writeJSON(g.stdout, rep); werr != nil {
						return werr
					}
				} else {
					lines := rep.Lines()
					for i := range lines {
						lines[i] = "reset: " + lines[i]
					}
					if perr := g.printReset(resetJSON{}, strings.Join(lines, "\n")); perr != nil {
						return perr
					}
				}
				if err != nil {
					if g.json {
						return &failedError{err}
					}
					return err
				}
				return nil
			}
			path := g.state
			if path == "" {
				var err error
				if path, err = statefile.DefaultPath(); err != nil {
					return err
				}
			}
			rep, err := statefile.Reset(ctx, path, g.waitLock)
			if err != nil {
				return err
			}
			r := resetJSON{Op: "reset", Backend: "sim", State: path, Result: ndst.ResultOK, Kept: rep.Kept}
			removed := rep.Existed
			r.Removed = &removed
			return g.printReset(r, "reset: "+rep.String())
		},
	}
}

// resetJSON is the --json answer of reset.
type resetJSON struct {
	Op      string `json:"op"`
	Backend string `json:"backend"`
	State   string `json:"state,omitempty"`
	Removed *bool  `json:"removed,omitempty"`
	Kept    string `json:"kept,omitempty"` // where a corrupt state file was moved
	Netns   string `json:"netns,omitempty"`
	Result  string `json:"result"`
}

// printReset prints r with --json, text otherwise.
func (g *globalOptions) printReset(r resetJSON, text string) error {
	if g.json {
		return writeJSON(g.stdout, r)
	}
	_, err := fmt.Fprintln(g.stdout, text)
	return err
}
