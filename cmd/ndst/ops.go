package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/safefile"
	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, newAddCmd, newDelCmd, newListCmd)
}

// exactArgs is cobra.ExactArgs with a usage error ndst recognises.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return ndst.Usagef("want %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// signalContext is cancelled by SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newAddCmd(g *globalOptions) *cobra.Command {
	var oneByOne bool
	var addrs ndst.Addrs
	var parent string
	var vlanID int
	cmd := &cobra.Command{
		Use:   "add N",
		Short: "Create N devices (the 2009 test module's echo N > /proc/sys/net/ndst/add)",
		Args:  exactArgs(1, "one argument N, the number of devices to create"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := ndst.ParseCount(args[0])
			if err != nil {
				return err
			}
			tmpl, err := ndst.ParseTemplate(g.template)
			if err != nil {
				return err
			}
			if err := addrs.Normalize(); err != nil {
				return err
			}
			if cmd.Flags().Changed("vlan-id") && vlanID == 0 {
				// 0 is the request's "from 1"; said on the command line
				// it is an id outside 1..4094.
				return ndst.Usagef("--vlan-id 0: want ids within 1..%d", ndst.MaxVLANID)
			}
			req := ndst.AddRequest{Count: n, Template: tmpl, Kind: g.addKind(), OneByOne: oneByOne, Addrs: addrs, Parent: parent, VLANID: vlanID}
			switch {
			case ndst.IsChildKind(req.Kind) && !g.nameExplicit:
				req.Template = ndst.Template{} // PARENT.ID, or macvlan%d
			case req.Kind == "ifb" && !g.nameExplicit && g.backend == "sim":
				req.Template, _ = ndst.ParseTemplate("ifb%d") // as the netlink backend names them
			}
			if err := req.CheckChildren(); err != nil {
				return err
			}
			what := fmt.Sprintf("add: creating %d devices %s", n, g.where())
			if req.Parent != "" {
				what = fmt.Sprintf("add: creating %d %ss on %s %s", n, req.Kind, req.Parent, g.where())
			}
			return g.timed(true, what, func(ctx context.Context, b ndst.Backend) (*ndst.Result, error) {
				return b.Add(ctx, req)
			})
		},
	}
	addAddrFlags(cmd, &addrs)
	cmd.Flags().StringVar(&parent, "parent", "", "with --kind vlan or macvlan: the device (ndst's, in its namespace) the N children go on")
	cmd.Flags().IntVar(&vlanID, "vlan-id", 0, "with --kind vlan: the first VLAN id; the N VLANs get ids ID .. ID+N-1, within 1..4094 (default 1)")
	cmd.Flags().BoolVar(&oneByOne, "one-by-one", false, "netlink: give every device its own timed create request (a loop of 'ip link add'), for per-device latency, instead of batches")
	return cmd
}

func newDelCmd(g *globalOptions) *cobra.Command {
	var oneByOne, stream, attribute bool
	var folded, match string
	cmd := &cobra.Command{
		Use:   "del START STOP | del --match PATTERN [START STOP]",
		Short: "Delete the devices with START <= ifindex <= STOP (the 2009 test module's echo START STOP > /proc/sys/net/ndst/del), or those named like --match",
		Args: func(cmd *cobra.Command, args []string) error {
			if match != "" && len(args) == 0 {
				return nil
			}
			return exactArgs(2, "two arguments, START and STOP ifindex (or --match PATTERN)")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			start, stop := 1, 1<<31-1
			if len(args) == 2 {
				var err error
				if start, stop, err = ndst.ParseRange(args[0], args[1]); err != nil {
					return err
				}
			}
			if match != "" {
				if err := ndst.CheckMatch(match); err != nil {
					return err
				}
			}
			how := "as one batch"
			switch {
			case oneByOne && stream:
				return ndst.Usagef("--one-by-one and --stream: choose one (--stream also deletes one by one, with the requests written at once)")
			case oneByOne:
				how = "one by one"
			case stream:
				how = "one by one in one request stream"
			}
			what := fmt.Sprintf("del: deleting ifindex %d..%d %s %s", start, stop, how, g.where())
			if match != "" {
				what = fmt.Sprintf("del: deleting the devices named like %s %s %s", match, how, g.where())
			}
			if folded != "" {
				if err := safefile.CheckOutput(folded); err != nil {
					return ndst.Usagef("--folded %s: %v", folded, err)
				}
				attribute = true
			}
			req := ndst.DelRequest{Start: start, Stop: stop, OneByOne: oneByOne, Stream: stream, Attribute: attribute, Match: match}
			if g.backend != "sim" {
				bound, err := g.realTimeout(cmd)
				if err != nil {
					return err
				}
				req.GiveUp = bound // per delete request on the real kernel (0: the backend's default)
			}
			return g.timed(false, what, func(ctx context.Context, b ndst.Backend) (*ndst.Result, error) {
				res, err := b.Del(ctx, req)
				if res != nil && folded != "" {
					if werr := writeFolded(folded, "ndst del", res); werr != nil {
						res.Notes = append(res.Notes, "--folded: "+werr.Error())
						if err == nil {
							err = werr
						}
					} else {
						g.note("wrote %s (folded stacks, µs: flamegraph.pl %s > del.svg, or open it in speedscope)", folded, folded)
					}
				}
				return res, err
			})
		},
	}
	cmd.Flags().BoolVar(&oneByOne, "one-by-one", false, "give every device its own unregister (a loop of 'ip link del') instead of one batch")
	cmd.Flags().BoolVar(&stream, "stream", false, "give every device its own delete request, all written at once and answered after (an ip -batch file of 'link del' lines without the waits): each still its own unregister")
	cmd.Flags().BoolVar(&attribute, "attribute", false, "real kernel (root): sample the deleting thread's kernel stack at 1 kHz and split the time into phases, as the emulated kernel always does")
	cmd.Flags().StringVar(&match, "match", "", "delete only the devices whose name matches this shell pattern ('dummy1*', 'veth[0-9]?'), within START..STOP when given")
	cmd.Flags().StringVar(&folded, "folded", "", "write the delete's stacks to FILE as folded stacks for a flame graph (flamegraph.pl, inferno, speedscope): the real kernel's sampled kernel stacks (implies --attribute), the emulated kernel's phases")
	return cmd
}

func newListCmd(g *globalOptions) *cobra.Command {
	var page int
	var reader string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the devices (name, ifindex, state, refcount)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if page < 0 {
				return ndst.Usagef("--page-size must not be negative")
			}
			if reader != "cursor" && reader != "naive" {
				return ndst.Usagef("unknown --reader %q (want cursor or naive)", reader)
			}
			ctx, cancel := signalContext()
			defer cancel()
			p := g.startProgress("list: reading the devices " + g.where())
			b, err := g.openBackend(ctx, false)
			if err != nil {
				p.stop()
				return err
			}
			defer b.Close()
			devs, err := b.List(ctx, ndst.ListRequest{PageSize: page, Naive: reader == "naive"})
			p.stop()
			if err != nil {
				return err
			}
			return g.printList(b.Name(), devs)
		},
	}
	cmd.Flags().IntVar(&page, "page-size", 0, "read the registry in pages of this many entries, like a small read buffer (0: all at once)")
	cmd.Flags().StringVar(&reader, "reader", "cursor", "how pages are read: cursor (resume at the cached bucket and offset) or naive (restart from the head each page)")
	return cmd
}

// timed opens the backend, runs op, prints its result and maps failures to
// exit codes.
//
// what says what the command is doing, for the progress line.
func (g *globalOptions) timed(creates bool, what string, op func(context.Context, ndst.Backend) (*ndst.Result, error)) error {
	return g.timedAs(creates, what, op, writeResultText)
}

// timedAs is timed with the result's text form written by write (JSON with
// --json): the commands whose results have a form of their own.
func (g *globalOptions) timedAs(creates bool, what string, op func(context.Context, ndst.Backend) (*ndst.Result, error), write func(io.Writer, *ndst.Result, textDetail) error) error {
	ctx, cancel := signalContext()
	defer cancel()
	p := g.startProgress(what)
	b, err := g.openBackend(ctx, creates)
	if err != nil {
		p.stop()
		return err
	}
	defer b.Close()
	return g.finishTimed(ctx, p, func(ctx context.Context) (*ndst.Result, error) { return op(ctx, b) }, write)
}

// finishTimed runs op with the real kernel's --trace around it, stops the
// progress line, prints the result and maps failures to exit codes.
func (g *globalOptions) finishTimed(ctx context.Context, p *progress, op func(context.Context) (*ndst.Result, error), write func(io.Writer, *ndst.Result, textDetail) error) error {
	finish, err := g.startRealTrace()
	if err != nil {
		p.stop()
		return err
	}
	res, err := op(ctx)
	if terr := finish(res); terr != nil && err == nil {
		err = terr
	}
	p.stop()
	if res == nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("interrupted; nothing was changed")
		}
		return err
	}
	var perr error
	if g.json {
		perr = writeJSON(g.stdout, res)
	} else {
		perr = write(g.stdout, res, textDetail{counters: g.verbose > 0 || g.counters, kernelLog: g.verbose > 0})
	}
	if perr != nil {
		return perr
	}
	if err != nil {
		return &failedError{err}
	}
	return nil
}

// where names the backend for progress lines.
func (g *globalOptions) where() string {
	switch g.backend {
	case "netlink":
		return "on the real kernel (namespace " + g.netns + ")"
	case "module":
		return "through the ndst kernel module (namespace " + g.netns + ")"
	}
	return "on the emulated kernel"
}
