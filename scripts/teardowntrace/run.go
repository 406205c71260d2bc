package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ndst-project/ndst/safefile"
)

// runMain is `teardowntrace run [-marker PATH] [-stack-interval D] [-timeout D] -- CMD ARGS...`:
// it starts the workload, writes its pid into the trace (trace_marker) so the
// analysis need not guess which task deletes, optionally samples the task's
// /proc/PID/stack into the trace at the given interval, and kills the workload
// when the timeout passes. Its exit status is the workload's (124 on timeout).
func runMain(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	marker := fs.String("marker", "", "trace_marker file of the tracefs instance (empty: no markers)")
	interval := fs.Duration("stack-interval", 0, "sample /proc/PID/stack this often (0: no sampling)")
	timeout := fs.Duration("timeout", 2*time.Minute, "kill the workload after this long")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: teardowntrace run [-marker PATH] [-stack-interval 500us] [-timeout 2m] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 || *timeout <= 0 || *interval < 0 {
		fs.Usage()
		return 2
	}
	var mk *os.File
	if *marker != "" {
		// trace_marker (a regular file of tracefs) never blocks; anything
		// else the user names must be a regular file too, never a FIFO we
		// could hang on.
		var err error
		mk, err = safefile.OpenFile(*marker, os.O_WRONLY|os.O_APPEND, 0, safefile.FollowLinks)
		if errors.Is(err, safefile.ErrNotRegular) {
			fmt.Fprintln(os.Stderr, "teardowntrace run: not a marker file:", err)
			return 2
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "teardowntrace run:", err)
			return 1
		}
		defer mk.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace run:", err)
		return 1
	}
	pid := cmd.Process.Pid
	if mk != nil {
		fmt.Fprintf(mk, "%s pid=%d comm=%s\n", workloadMarker, pid, baseName(cmdArgs[0]))
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	if *interval > 0 && mk != nil {
		err = sampleUntil(pid, *interval, mk, done)
	} else {
		err = <-done
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		fmt.Fprintf(os.Stderr, "teardowntrace run: %s still running after %s: killed\n", cmdArgs[0], *timeout)
		return 124
	case ctx.Err() != nil:
		fmt.Fprintf(os.Stderr, "teardowntrace run: interrupted: %s killed\n", cmdArgs[0])
		return 130
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardowntrace run:", err)
		return 1
	}
	return 0
}

// sampleUntil writes one stack marker per interval until the workload exits.
func sampleUntil(pid int, every time.Duration, mk *os.File, done <-chan error) error {
	statPath := fmt.Sprintf("/proc/%d/stat", pid)
	stackPath := fmt.Sprintf("/proc/%d/stack", pid)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
		}
		state, ok := procState(statPath)
		if !ok {
			continue
		}
		raw, err := safefile.ReadKernelFile(stackPath)
		if err != nil {
			continue
		}
		s := StackSample{TID: pid, State: state, Frames: ParseProcStack(bytes.NewReader(raw))}
		line := FormatStackMarker(s)
		if len(line) > 1000 { // trace_marker truncates long writes; keep the inner frames
			line = line[:1000]
		}
		if _, err := mk.WriteString(line + "\n"); err != nil {
			return fmt.Errorf("writing the stack marker: %w", err)
		}
	}
}

// procState returns the one-letter state from /proc/PID/stat.
func procState(path string) (string, bool) {
	b, err := safefile.ReadKernelFile(path)
	if err != nil {
		return "", false
	}
	// "pid (comm) S ..."; comm may contain spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) == 0 {
		return "", false
	}
	return f[0], true
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
