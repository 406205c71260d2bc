package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/ndst-project/ndst/explain"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/safefile"
	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newExplainCmd) }

// maxExplainInput bounds what explain reads (a day of a busy host's kernel
// log is a few MiB).
const maxExplainInput = 64 << 20

// explainStdin and explainProc are where explain reads stdin and /proc;
// tests point them elsewhere.
var (
	explainStdin io.Reader = os.Stdin
	explainProc            = "/proc"
)

func newExplainCmd(g *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "explain [LINE... | FILE | -]",
		Short: "Explain kernel log lines about a device or namespace that will not go away (dmesg | ndst explain -)",
		Long: `Explain the kernel's "unregister_netdevice: waiting for X to become free. Usage count = N"
warnings, the ref_tracker stacks that follow them on kernels with CONFIG_NET_DEV_REFCNT_TRACKER,
and iproute2's "Cannot remove namespace file ...: Device or resource busy".

For each device: what its count means on the kernel line that printed it (from 5.13 the
count includes the device's own reference, so one holder shows as 2), who holds it (named
by ref_tracker's stacks) or can hold it on that line (the emulated kernel's holders), whether
the log shows a leak, a slow release or an unbalanced put, and the next command to run.
For a busy namespace file: where it is still mounted (from /proc/*/mountinfo).

The input is the arguments (one or more log lines), a file (an argument that names one),
or - for stdin. The kernel line is --profile when given, else the release the log names,
else the line its ref_tracker format belongs to, else the running kernel's.

  dmesg | ndst explain -
  journalctl -k -b | ndst explain -
  ndst explain /var/log/kern.log
  ndst explain 'unregister_netdevice: waiting for lo to become free. Usage count = 2'
  ndst explain --profile 5.10 --json - < console.log`,
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := explainInput(cmd.Context(), args)
			if err != nil {
				return err
			}
			o := explain.Options{}
			if cmd.Flags().Changed("profile") {
				switch {
				case g.profile == "auto":
				case netdev.Profiles[g.profile].Name == "":
					return ndst.Usagef("--profile %q: not a kernel line (%s, or auto)", g.profile, strings.Join(netdev.ProfileNames, ", "))
				default:
					o.Profile = g.profile
				}
			}
			if runtime.GOOS == "linux" {
				if b, err := safefile.ReadKernelFile("/proc/sys/kernel/osrelease"); err == nil {
					o.Running = strings.TrimSpace(string(b))
				}
			}
			lg := explain.Parse(text)
			if len(lg.Busy) > 0 && runtime.GOOS == "linux" {
				o.Mounts = explain.ScanNsfsMounts(explainProc)
			}
			r := explain.Explain(lg, o)
			if g.json {
				return writeJSON(g.stdout, r)
			}
			return r.WriteText(g.stdout)
		},
	}
}

// explainInput reads the lines to explain: "-" is stdin, one argument that
// names a file is that file, anything else is the lines themselves.
func explainInput(ctx context.Context, args []string) (string, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case len(args) == 0:
		return "", ndst.Usagef("explain needs kernel log lines: give them as arguments, a file, or - for stdin (dmesg | ndst explain -)")
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(io.LimitReader(safefile.NewReader(ctx, explainStdin), maxExplainInput+1))
		if err != nil {
			return "", fmt.Errorf("read stdin: %w", err)
		}
		if len(b) > maxExplainInput {
			return "", ndst.Usagef("stdin is larger than %s: give the part of the log around the warnings", safefile.Bytes(maxExplainInput))
		}
		return string(b), nil
	case len(args) == 1 && !strings.Contains(args[0], "\n") && !strings.Contains(args[0], "unregister_netdevice"):
		if _, err := os.Stat(args[0]); err == nil {
			b, err := safefile.ReadFile(ctx, args[0], maxExplainInput, safefile.FollowLinks)
			if err != nil {
				var tl *safefile.TooLargeError
				if errors.As(err, &tl) {
					return "", ndst.Usagef("%v: give the part of the log around the warnings", err)
				}
				return "", ndst.Usagef("%v", err)
			}
			return string(b), nil
		}
	}
	return strings.Join(args, "\n"), nil
}
