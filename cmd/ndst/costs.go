package main

import (
	"github.com/ndst-project/ndst/costs"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newCostsCmd) }

func newCostsCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "costs",
		Short: "Print the emulated kernel's per-operation CPU cost table (the built-in one, or --costs FILE)",
		Long: `Print the cost table the emulated kernel charges, as JSON that --costs accepts.
Edit a copy to explore "what if" questions; 'ndst calibrate' writes one measured on this host.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			t := costs.Default()
			if g.costs != "" {
				var err error
				if t, err = costs.Load(g.costs); err != nil {
					return err
				}
			}
			return writeJSONIndent(g.stdout, t)
		},
	}
}
