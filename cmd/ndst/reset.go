package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/ndst-project/ndst/ndst/nlbackend"
	"github.com/ndst-project/ndst/statefile"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newResetCmd) }

func newResetCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reset",
		Short: "Forget every device: remove the emulated state file, or delete the netlink backend's namespace",
		Long: `With --backend sim (the default), remove the emulated registry's state file
(taking its lock first, so a running ndst is not disturbed). This is also the
fix for a corrupt state file.
With --backend netlink, delete ndst's network namespace (--netns) and wait
until its devices are gone. The host's root namespace is never touched.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if g.backend == "netlink" {
				if err := nlbackend.Reset(ctx, g.nlOptions()); err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "reset: namespace %s deleted\n", g.netns)
				return nil
			}
			path := g.state
			if path == "" {
				var err error
				if path, err = statefile.DefaultPath(); err != nil {
					return err
				}
			}
			lock, err := statefile.LockContext(ctx, path, g.waitLock)
			if err != nil {
				return err
			}
			defer lock.Unlock()
			switch err := os.Remove(path); {
			case errors.Is(err, fs.ErrNotExist):
				fmt.Fprintf(g.stdout, "reset: no state file at %s; nothing to do\n", path)
			case err != nil:
				return err
			default:
				fmt.Fprintf(g.stdout, "reset: removed %s\n", path)
			}
			return nil
		},
	}
}
