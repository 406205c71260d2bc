// Command kmodtable prints the in-kernel cost of registering and
// unregistering devices, measured by the ndst kernel module, beside what the
// netlink backend takes for the same work, on the stock Debian kernel in the
// VM rig (scripts/kmod-vs-netlink.sh runs it).
//
// For each CPU count it boots the guest once with the module loaded and runs,
// for each N: the module backend's add N, one-by-one del, add N and batched
// del, then the netlink backend's same four commands, all in ndst's own
// namespace of the guest. Every figure comes from that run's own JSON
// results: wall_ns (what ndst took around the write or the netlink requests)
// and, for the module, counters.kernel_ns (the module's ktime around the
// whole operation inside the kernel).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/vmrig"
)

func main() {
	cpus := flag.String("cpus", "1,2", "guest CPU counts, comma-separated")
	ns := flag.String("n", "100,1000", "device counts, comma-separated")
	preempt := flag.String("preempt", "none", "guest preemption mode")
	timeout := flag.Duration("timeout", 15*time.Minute, "bound on each boot")
	flag.Parse()
	cl, err1 := ints(*cpus)
	nl, err2 := ints(*ns)
	if err := errors.Join(err1, err2); err != nil || flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "kmodtable: bad arguments: %v\n", err)
		os.Exit(2)
	}
	if err := run(os.Stdout, cl, nl, *preempt, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "kmodtable: %v\n", err)
		if vmrig.Skippable(err) {
			os.Exit(4)
		}
		os.Exit(1)
	}
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// The operations of the table, in order, with the ndst arguments of each.
var ops = []struct {
	name string
	args func(n int) []string
}{
	{"add", func(n int) []string { return []string{"add", strconv.Itoa(n)} }},
	{"del one by one", func(int) []string { return []string{"del", "1", "2147483647", "--one-by-one"} }},
	{"add", func(n int) []string { return []string{"add", strconv.Itoa(n)} }},
	{"del batched", func(int) []string { return []string{"del", "1", "2147483647"} }},
}

var backends = []string{"module", "netlink"}

func run(w io.Writer, cpus, counts []int, preempt string, timeout time.Duration) error {
	fmt.Fprintln(w, "| CPUs | N | operation | netlink wall | module wall | module in-kernel | in-kernel per device | in-kernel / netlink wall |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var notes []string
	for _, c := range cpus {
		var cmds [][]string
		for _, n := range counts {
			for _, be := range backends {
				for _, op := range ops {
					cmds = append(cmds, append([]string{"--json", "--backend", be}, op.args(n)...))
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		boot, err := vmrig.Run(ctx, vmrig.Config{CPUs: c, Preempt: preempt, Module: true, Timeout: timeout}, cmds...)
		cancel()
		if err != nil {
			var e *vmrig.Error
			if errors.As(err, &e) && !vmrig.Skippable(err) {
				return fmt.Errorf("boot with %d CPUs: %w\n%s", c, err, e.Stderr)
			}
			return fmt.Errorf("boot with %d CPUs: %w", c, err)
		}
		notes = append(notes, fmt.Sprintf("%d CPU(s): kernel %s, accel %s, preempt %s, host load %s→%s, boot %v",
			c, boot.Host["release"], boot.Host["accel"], boot.Guest["preempt"], boot.Host["load1"], boot.Host["load1_end"], boot.Wall().Round(time.Second)))
		i := 0
		for _, n := range counts {
			res := map[string][]ndst.Result{}
			for _, be := range backends {
				for range ops {
					cr := boot.Commands[i]
					i++
					var r ndst.Result
					if err := json.Unmarshal([]byte(cr.Stdout), &r); err != nil || cr.Exit != 0 || r.Count != n {
						return fmt.Errorf("%d CPUs: %s: exit %d, count %d (want %d), %v; stderr %q", c, cr.Args, cr.Exit, r.Count, n, err, cr.Stderr)
					}
					res[be] = append(res[be], r)
				}
			}
			for j, op := range ops {
				if j == 2 {
					continue // the second add only refills for the batched del
				}
				m, nlr := res["module"][j], res["netlink"][j]
				k := m.Counters["kernel_ns"]
				fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %s | %.2f |\n", c, n, op.name,
					ms(nlr.WallNS), ms(m.WallNS), ms(k), ms(k/int64(n)), float64(k)/float64(nlr.WallNS))
			}
		}
	}
	fmt.Fprintln(w)
	for _, s := range notes {
		fmt.Fprintln(w, "- "+s)
	}
	fmt.Fprintln(w, "- netlink wall: the netlink backend's own time for the requests and their answers, after its listing (creates pipelined; del batched is one RTM_DELLINK for the interface group).")
	fmt.Fprintln(w, "- module wall: the write to /proc/sys/net/ndst/{add,del,del_batch}; module in-kernel: the module's ktime around the same operation.")
	return nil
}

func ms(ns int64) string {
	d := float64(ns) / 1e6
	switch {
	case d >= 100:
		return fmt.Sprintf("%.0f ms", d)
	case d >= 1:
		return fmt.Sprintf("%.1f ms", d)
	}
	return fmt.Sprintf("%.3f ms", d)
}
