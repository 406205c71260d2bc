// Command ndst creates and destroys network devices by the thousand and times
// their teardown, on an embedded emulated kernel (the default) or on the real
// kernel through netlink.
//
// Exit codes: 0 ok, 1 the operation failed (including a detected livelock),
// 2 usage error; a crash of the Go runtime (out of memory) is SIGABRT, never
// 2. With --json every outcome, failures included, is exactly one JSON object
// on stdout.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"strconv"
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
	// A fatal runtime error (out of memory above all) and an unrecovered
	// panic would make the Go runtime exit with status 2, ndst's usage
	// code. With tracebacks at "crash" the runtime aborts instead (SIGABRT,
	// status 134 in a shell), so 2 always means a bad command line.
	debug.SetTraceback("crash")
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the CLI with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	restorePendingKnobs(stderr)
	out := &countingWriter{w: stdout}
	g := &globalOptions{stdout: out, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err != nil && !g.parsed {
		// The command line did not parse, so the flags were not set:
		// read --json from the words before the command ourselves.
		g.json = jsonRequested(args)
	}
	return exitCode(g, out, cmd, err)
}

// exitCode reports err (on stderr, and as one JSON object on stdout with
// --json unless the command already printed its own) and maps it to the exit
// status.
func exitCode(g *globalOptions, out *countingWriter, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	var fe *failedError
	if errors.As(err, &fe) { // already reported through the result
		return exitFailure
	}
	code := exitFailure
	if ndst.IsUsage(err) || isCobraUsage(err) {
		code = exitUsage
	}
	fmt.Fprintf(g.stderr, "ndst: %v\n", err)
	if g.json && out.n == 0 {
		_ = writeJSON(out, errorJSON{Op: opName(cmd), Result: ndst.ResultError, Error: err.Error(), ExitCode: code})
	}
	return code
}

// opName is the op of a command's JSON answers: its path below ndst, words
// joined by "-" ("add", "netns-add", "help-counters"), as its results name
// themselves; "ndst" for the root.
func opName(cmd *cobra.Command) string {
	var words []string
	for c := cmd; c != nil && c.HasParent(); c = c.Parent() {
		words = append([]string{c.Name()}, words...)
	}
	if len(words) == 0 {
		return "ndst"
	}
	return strings.Join(words, "-")
}

// errorJSON is the --json answer of a command that failed before it could
// print a result of its own.
type errorJSON struct {
	Op       string `json:"op"`
	Result   string `json:"result"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// countingWriter counts what was written through it, so that a failure
// after a command printed its JSON answer does not print a second one.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// jsonRequested reports whether --json is among the words before "--"; it
// is used only when the command line did not parse.
func jsonRequested(args []string) bool {
	for _, a := range args {
		switch {
		case a == "--":
			return false
		case a == "--json":
			return true
		case strings.HasPrefix(a, "--json="):
			v, err := strconv.ParseBool(strings.TrimPrefix(a, "--json="))
			return err == nil && v
		}
	}
	return false
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
		Long: `ndst adds and deletes network devices by the thousand, times their teardown
and says what each device waited for.

The default backend is an embedded, deterministic emulated kernel (no
privileges needed): jiffies at a chosen HZ, CPUs, a preemption model, an RCU
model and a netdev registry with refcounts, with swappable strategies for
netdev_wait_allrefs(). The netlink backend (Linux only, as root) does the
same on the real kernel, inside ndst's own network namespace.

Reproduce the 2009 experiment (1 CPU, no preemption, HZ=1000, msleep(250)),
whose test module was driven by echo 1000 > /proc/sys/net/ndst/add and
echo 1 1000 > /proc/sys/net/ndst/del:
  ndst add 1000
  ndst del 1 1000`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          rootArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !g.json {
				cmd.SetOut(g.stderr)
				_ = cmd.Usage()
			}
			return ndst.Usagef("missing command (ndst add N, ndst del START STOP, ndst bench, ...; ndst --help lists them all)")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			g.parsed = true
			return g.validate(cmd)
		},
	}
	root.Version = versionString()
	root.SetVersionTemplate("ndst {{.Version}}\n")
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
	root.InitDefaultCompletionCmd()
	root.SetHelpCommand(newHelpCmd())
	for _, c := range root.Commands() {
		refuseStrayArgs(c)
	}
	addNetnsShorthand(root, g)
	return root
}

// addNetnsShorthand gives every command that has no -n of its own (churn's
// is its count) the iproute2 habit "-n NS" for --netns: a hidden flag "ns"
// with the shorthand, bound to the same setting (validate treats it as
// --netns).
func addNetnsShorthand(c *cobra.Command, g *globalOptions) {
	for _, sub := range c.Commands() {
		addNetnsShorthand(sub, g)
	}
	if c.HasParent() && c.LocalFlags().ShorthandLookup("n") == nil && c.Flags().Lookup("ns") == nil {
		c.Flags().StringVarP(&g.netns, "ns", "n", g.netns, "the network namespace to act in (--netns)")
		_ = c.Flags().MarkHidden("ns")
	}
}

// rootArgs refuses words that name no command: cobra would otherwise print
// the help and exit 0.
func rootArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case cmd.ArgsLenAtDash() == 0:
		return ndst.Usagef("%q after \"--\" is not taken as a command; put the command first (ndst add -- 5 ends add's flags)", args[0])
	case args[0] == "":
		return ndst.Usagef(`unknown command "" (an empty word); ndst --help lists the commands`)
	}
	return ndst.Usagef("unknown command %q; ndst --help lists the commands", args[0])
}

// newHelpCmd is "ndst help [COMMAND]", which refuses an unknown topic.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			target, rest, err := root.Find(args)
			if err != nil || len(rest) > 0 {
				return ndst.Usagef("no help topic %q; ndst --help lists the commands", strings.Join(args, " "))
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}

// refuseStrayArgs makes every command that only groups others (such as
// "completion") refuse a missing or unknown subcommand with a usage error,
// instead of printing its help and exiting 0.
func refuseStrayArgs(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseStrayArgs(sub)
	}
	if c.Runnable() || !c.HasSubCommands() {
		return
	}
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	want := strings.Join(names, ", ")
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return ndst.Usagef("unknown command %q for %q; want one of %s", args[0], cmd.CommandPath(), want)
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error {
		return ndst.Usagef("%s needs one of %s", cmd.CommandPath(), want)
	}
}

// negativeRE recognises a negative number that the flag parser took for a
// shorthand flag (as in "ndst add -5").
var negativeRE = regexp.MustCompile(`unknown shorthand flag: '([0-9])'`)

// isCobraUsage recognises cobra's own command-line errors, which it returns
// as plain errors (an unknown subcommand, a bad help topic).
func isCobraUsage(err error) bool {
	return strings.HasPrefix(err.Error(), "unknown command ")
}
