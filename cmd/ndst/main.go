// Command ndst creates and destroys network devices by the thousand and times
// their teardown, on an embedded emulated kernel (the default) or on the real
// kernel through netlink.
//
// Exit codes: 0 ok, 1 the operation failed (including a detected livelock),
// 2 usage error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/spf13/cobra"
)

// Exit codes, following convention.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// subcommands holds the constructors of the subcommands; each lives in its own
// file and registers itself from init.
var subcommands []func(*globalOptions) *cobra.Command

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the CLI with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	g := &globalOptions{stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	err := root.Execute()
	return exitCode(g, err)
}

func exitCode(g *globalOptions, err error) int {
	if err == nil {
		return exitOK
	}
	var fe *failedError
	if errors.As(err, &fe) { // already reported through the result
		return exitFailure
	}
	fmt.Fprintf(g.stderr, "ndst: %v\n", err)
	if ndst.IsUsage(err) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// failedError marks an operation whose failure has already been printed as
// part of its result (text or JSON); main only sets the exit code.
type failedError struct{ err error }

func (e *failedError) Error() string { return e.err.Error() }
func (e *failedError) Unwrap() error { return e.err }

func newRootCmd(g *globalOptions) *cobra.Command {
	root := &cobra.Command{
		Use:   "ndst",
		Short: "Reproduce and time the life and death of network devices",
		Long: `ndst adds and deletes network devices by the thousand and times their teardown.

The default backend is an embedded, deterministic emulated kernel (no
privileges needed): jiffies at a chosen HZ, CPUs, a preemption model, an RCU
model and a netdev registry with refcounts, with swappable strategies for
netdev_wait_allrefs(). The netlink backend does the same on the real kernel,
inside ndst's own network namespace.

Reproduce the 2009 experiment (1 CPU, no preemption, HZ=1000, msleep(250)):
  ndst add 1000
  ndst del 1 1000`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.validate(cmd)
		},
	}
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if m := negativeRE.FindStringSubmatch(err.Error()); m != nil {
			return ndst.Usagef("numbers must not be negative (got -%s...): counts and ifindexes start at 1", m[1])
		}
		return ndst.Usagef("%v", err)
	})
	g.register(root)
	for _, mk := range subcommands {
		root.AddCommand(mk(g))
	}
	return root
}

// negativeRE recognises a negative number that the flag parser took for a
// shorthand flag (as in "ndst add -5").
var negativeRE = regexp.MustCompile(`unknown shorthand flag: '([0-9])'`)

// isCobraUsage recognises cobra's own command-line errors, which it returns
// as plain errors (an unknown subcommand).
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}
