// Package vmrig runs ndst inside a stock Debian kernel booted under qemu and
// reads back what each command printed. It drives scripts/vm-run.sh, the one
// implementation of the rig (kernel fetch into a cache, initramfs with a
// static busybox, dummy.ko, veth.ko where the kernel has it as a module, and
// a static ndst, optionally the ndst kernel module built against the
// kernel's own headers, the boot itself), and parses
// the script's delimited output into a Boot record, with the kernel log lines
// each command caused and, on request, the guest's whole kernel log.
//
// Invariants:
//   - Run never leaves a qemu running: the script kills it on every exit path,
//     and a cancelled context stops the script with SIGTERM (then SIGKILL after
//     a grace period) so that its cleanup runs.
//   - Run returns a *Error (never a bare exec error) when the rig itself fails,
//     with a Kind that tells a missing host tool or kernel (callers skip) from
//     a guest that did not finish (callers fail).
//   - A guest command that exits non-zero is not a rig failure: Run returns
//     the Boot with that command's Exit set and a nil error.
package vmrig

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Marker starts every line the rig adds to the guest programs' output.
const Marker = "@@ndst-vm "

// Separator splits commands on the script's command line.
const Separator = ";;"

// Config selects the guest kernel and machine.
type Config struct {
	// CPUs is the guest's CPU count (0 means 1).
	CPUs int
	// Preempt is the preemption model to boot: none, voluntary, full or
	// lazy (preempt= on a PREEMPT_DYNAMIC kernel's command line), or rt;
	// "" means none where the kernel takes preempt=, else the model it is
	// built with. A model the kernel cannot boot is a usage error.
	Preempt string
	// Kernel is a kernel image package (.deb) or a vmlinuz; "" fetches
	// Package from Debian's registry.
	Kernel string
	// Package is a kernel image package of Debian's registry, or a
	// metapackage depending on one ("" means linux-image-amd64).
	Package string
	// Timeout bounds the whole boot (0 means the script's default, 300 s).
	Timeout time.Duration
	// GuestBin replaces ndst inside the guest with this static program
	// (no --backend flag is added to its arguments).
	GuestBin string
	// Shell runs each command as one busybox shell command line (its
	// words joined by spaces, run by sh -c), with ndst on the PATH.
	Shell bool
	// Module builds the ndst kernel module (kmod/) against the kernel's
	// headers and loads it in the guest.
	Module bool
	// Headers is a kernel build tree for Module ("": the Debian headers of
	// the kernel package).
	Headers string
	// Dmesg returns the guest's whole kernel log in Boot.KernelLog.
	Dmesg bool
	// Append adds kernel parameters to the guest's command line (the
	// script's --append: words NAME or NAME=VALUE, none of the rig's own).
	Append string
	// Script is the path of vm-run.sh; "" finds it by walking up from the
	// working directory.
	Script string
	// Env holds extra NAME=VALUE entries for the script (NDST_QEMU,
	// NDST_VM_CACHE, NDST_VM_ACCEL, ...).
	Env []string
}

// Kind classifies a rig failure.
type Kind int

// Failure kinds; their values are the script's exit statuses.
const (
	KindUsage  Kind = 2 // bad arguments
	KindHost   Kind = 3 // the host lacks qemu, busybox-static or go
	KindKernel Kind = 4 // no usable kernel: registry unreachable, no dummy.ko, module does not load; no headers for Module
	KindGuest  Kind = 5 // the guest did not finish (timeout, panic) or could not be built
)

func (k Kind) String() string {
	switch k {
	case KindUsage:
		return "usage"
	case KindHost:
		return "host"
	case KindKernel:
		return "kernel"
	case KindGuest:
		return "guest"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is a failure of the rig, with the script's own message.
type Error struct {
	Kind Kind
	// Msg is the script's "vm-run: ..." message (the last one it printed).
	Msg string
	// Stderr is everything the script printed on stderr (console tail
	// included).
	Stderr string
}

func (e *Error) Error() string { return fmt.Sprintf("vm rig (%s): %s", e.Kind, e.Msg) }

// Skippable reports whether err means the rig cannot run on this host (a
// missing tool or an unobtainable kernel), as opposed to a failure.
func Skippable(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Kind == KindHost || e.Kind == KindKernel)
}

// Boot is what one boot produced.
type Boot struct {
	// Host holds the host header: accel, cpus, preempt, release, hz,
	// load1, kernel and, from the last line, wall_ms and load1_end.
	Host map[string]string
	// Guest holds the guest header: release, cpus, preempt, uptime.
	Guest map[string]string
	// Module is the first module line ("dummy loaded").
	Module string
	// Modules are all the module lines, in order ("dummy loaded", "veth
	// loaded", "ndst loaded"); see ModuleState.
	Modules []string
	// Commands are the guest commands in the order they ran.
	Commands []CommandResult
	// Done is true when the guest ran every command and powered off.
	Done bool
	// Fault is the guest's fault line, if any ("module insmod ... failed").
	Fault string
	// Cmdline is the command line the guest kernel booted with (its
	// /proc/cmdline).
	Cmdline string
	// KernelLog is the guest's whole kernel log (dmesg lines), read after
	// the last command; only with Config.Dmesg.
	KernelLog []string
}

// ModuleState is what the guest said of the module name: "loaded", "built
// in" (veth in a kernel with CONFIG_VETH=y), "absent: REASON" (veth in a
// kernel without it, or whose veth.ko did not load), or "" when the guest
// did not mention it.
func (b *Boot) ModuleState(name string) string {
	for _, m := range b.Modules {
		if rest, ok := strings.CutPrefix(m, name+" "); ok {
			return rest
		}
	}
	return ""
}

// Wall is the host's wall time of the boot (qemu start to exit).
func (b *Boot) Wall() time.Duration {
	ms, err := strconv.ParseInt(b.Host["wall_ms"], 10, 64)
	if err != nil {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// CommandResult is one guest command's output.
type CommandResult struct {
	Index   int    // 1-based, in command-line order
	Args    string // the arguments as the guest echoed them
	Stdout  string
	Stderr  string
	Exit    int
	Seconds float64 // guest uptime difference around the command (10 ms resolution)
	// KernelLog holds the kernel log lines (dmesg format, "[  12.345678]
	// msg") printed while the command ran.
	KernelLog []string
}

// Parse reads the script's stdout.
func Parse(r io.Reader) (*Boot, error) {
	b := &Boot{Host: map[string]string{}, Guest: map[string]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	var cur *CommandResult
	var out *strings.Builder
	var stdout, stderr, kmsg, dmesg strings.Builder
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		rest, ok := strings.CutPrefix(text, Marker)
		if !ok {
			if out != nil {
				out.WriteString(text)
				out.WriteByte('\n')
			}
			continue
		}
		word, arg, _ := strings.Cut(rest, " ")
		switch word {
		case "host":
			for k, v := range fields(arg) {
				b.Host[k] = v
			}
		case "guest":
			b.Guest = fields(arg)
		case "module":
			if b.Module == "" {
				b.Module = arg
			}
			b.Modules = append(b.Modules, arg)
		case "fault":
			b.Fault = arg
		case "cmdline":
			b.Cmdline = arg
		case "begin":
			if cur != nil {
				return nil, fmt.Errorf("line %d: begin inside command %d", line, cur.Index)
			}
			ns, args, _ := strings.Cut(arg, " ")
			n, err := strconv.Atoi(ns)
			if err != nil || n != len(b.Commands)+1 {
				return nil, fmt.Errorf("line %d: begin %q, want command %d", line, ns, len(b.Commands)+1)
			}
			cur = &CommandResult{Index: n, Args: args}
			stdout.Reset()
			stderr.Reset()
			kmsg.Reset()
			out = &stdout
		case "stderr":
			if cur == nil || arg != strconv.Itoa(cur.Index) {
				return nil, fmt.Errorf("line %d: stderr %q outside its command", line, arg)
			}
			out = &stderr
		case "kmsg":
			if cur == nil || arg != strconv.Itoa(cur.Index) || out != &stderr {
				return nil, fmt.Errorf("line %d: kmsg %q outside its command, or before its stderr", line, arg)
			}
			out = &kmsg
		case "dmesg":
			if cur != nil {
				return nil, fmt.Errorf("line %d: dmesg inside command %d", line, cur.Index)
			}
			dmesg.Reset()
			out = &dmesg
		case "end":
			f := strings.Fields(arg)
			if cur == nil || len(f) == 0 || f[0] != strconv.Itoa(cur.Index) {
				return nil, fmt.Errorf("line %d: end %q outside its command", line, arg)
			}
			kv := fields(strings.Join(f[1:], " "))
			exit, err := strconv.Atoi(kv["exit"])
			if err != nil {
				return nil, fmt.Errorf("line %d: end without a valid exit=: %q", line, arg)
			}
			cur.Exit = exit
			cur.Seconds, _ = strconv.ParseFloat(kv["seconds"], 64)
			cur.Stdout = stdout.String()
			cur.Stderr = stderr.String()
			cur.KernelLog = lines(kmsg.String())
			b.Commands = append(b.Commands, *cur)
			cur, out = nil, nil
		case "done":
			if cur != nil {
				return nil, fmt.Errorf("line %d: done inside command %d", line, cur.Index)
			}
			b.Done = true
			out = nil
		default:
			return nil, fmt.Errorf("line %d: unknown marker %q", line, word)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	b.KernelLog = lines(dmesg.String())
	return b, nil
}

// lines splits text into its lines; nil when there are none.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// fields parses "k=v k=v ..." where a value may contain spaces: a word
// without '=' continues the previous value.
func fields(s string) map[string]string {
	m := map[string]string{}
	last := ""
	for _, w := range strings.Fields(s) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" {
			if last != "" {
				m[last] += " " + w
			}
			continue
		}
		m[k] = v
		last = k
	}
	return m
}

// Args returns the script's arguments for cfg and the commands.
func Args(cfg Config, cmds ...[]string) ([]string, error) {
	var a []string
	if cfg.CPUs != 0 {
		a = append(a, "--cpus", strconv.Itoa(cfg.CPUs))
	}
	if cfg.Preempt != "" {
		a = append(a, "--preempt", cfg.Preempt)
	}
	a = append(a, kernelArgs(cfg)...)
	if cfg.Timeout != 0 {
		if cfg.Timeout < 0 {
			return nil, fmt.Errorf("vmrig: negative timeout %v", cfg.Timeout)
		}
		a = append(a, "--timeout", strconv.FormatInt(int64(math.Ceil(cfg.Timeout.Seconds())), 10))
	}
	if cfg.GuestBin != "" {
		a = append(a, "--guest-bin", cfg.GuestBin)
	}
	a = append(a, moduleArgs(cfg)...)
	if cfg.Shell {
		a = append(a, "--shell")
	}
	if cfg.Dmesg {
		a = append(a, "--dmesg")
	}
	if cfg.Append != "" {
		a = append(a, "--append", cfg.Append)
	}
	if len(cmds) == 0 {
		return a, nil
	}
	a = append(a, "--")
	for i, c := range cmds {
		if len(c) == 0 {
			return nil, fmt.Errorf("vmrig: command %d is empty", i+1)
		}
		for _, w := range c {
			if w == Separator {
				return nil, fmt.Errorf("vmrig: command %d contains the separator %q", i+1, Separator)
			}
		}
		if i > 0 {
			a = append(a, Separator)
		}
		a = append(a, c...)
	}
	return a, nil
}

func kernelArgs(cfg Config) []string {
	var a []string
	if cfg.Kernel != "" {
		a = append(a, "--kernel", cfg.Kernel)
	}
	if cfg.Package != "" {
		a = append(a, "--package", cfg.Package)
	}
	return a
}

func moduleArgs(cfg Config) []string {
	var a []string
	if cfg.Module {
		a = append(a, "--module")
	}
	if cfg.Headers != "" {
		a = append(a, "--headers", cfg.Headers)
	}
	return a
}

// FindScript walks up from the working directory to the folder holding
// scripts/vm-run.sh.
func FindScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "scripts", "vm-run.sh")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("vmrig: scripts/vm-run.sh not found above the working directory")
		}
		dir = up
	}
}

// HostReady reports, without running anything, why the rig cannot run here:
// qemu-system-x86_64, a static /bin/busybox and go must be present (NDST_QEMU
// and NDST_BUSYBOX in env override the first two, as for the script).
func HostReady(env []string) error {
	qemu, bb := lookupEnv(env, "NDST_QEMU", "qemu-system-x86_64"), lookupEnv(env, "NDST_BUSYBOX", "/bin/busybox")
	if _, err := exec.LookPath(qemu); err != nil {
		return &Error{Kind: KindHost, Msg: fmt.Sprintf("qemu not found (%s): install qemu-system-x86 (scripts/ci-deps.sh does)", qemu)}
	}
	if err := staticELF(bb); err != nil {
		return &Error{Kind: KindHost, Msg: fmt.Sprintf("%v: install busybox-static (scripts/ci-deps.sh does)", err)}
	}
	if _, err := exec.LookPath("go"); err != nil {
		return &Error{Kind: KindHost, Msg: "go not found: needed to build the guest's static ndst"}
	}
	return nil
}

func lookupEnv(env []string, name, def string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// staticELF returns an error unless path is a statically linked ELF file.
func staticELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("busybox %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("busybox %s is dynamically linked (the guest has no libc)", path)
		}
	}
	return nil
}

// Kernel is what Fetch found.
type Kernel struct {
	Release string // e.g. 6.1.0-57-amd64
	Vmlinuz string
	Module  string // dummy.ko, or "builtin"
	// Veth is veth.ko, "builtin" (CONFIG_VETH=y) or "none"; VethWhy says
	// why a kernel has none (no veth.ko and no CONFIG_VETH=y, or a cached
	// kernel staged without it that could not be completed).
	Veth    string
	VethWhy string
	Config  string // the kernel config, "" when unknown
	HZ      int    // 0 when unknown
	Source  string // package and version, or the file given
	// PreemptModels are the preemption models the kernel boots (from its
	// config; nil when unknown) and PreemptBoot the one it boots without
	// preempt= on its command line.
	PreemptModels []string
	PreemptBoot   string
	// Headers is the kernel build tree and NdstKo the module built
	// against it; only when Fetch ran with Config.Module.
	Headers string
	NdstKo  string
}

// Fetch makes sure the kernel is in the cache (downloading it when needed)
// and reports it; with cfg.Module, also the kernel's headers and the ndst
// module built against them.
func Fetch(ctx context.Context, cfg Config) (*Kernel, error) {
	a := append([]string{"--fetch-only"}, kernelArgs(cfg)...)
	a = append(a, moduleArgs(cfg)...)
	stdout, err := runScript(ctx, cfg, a)
	if err != nil {
		return nil, err
	}
	kv := map[string]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			kv[k] = v
		}
	}
	k := &Kernel{Release: kv["release"], Vmlinuz: kv["vmlinuz"], Module: kv["module"], Veth: kv["veth"], VethWhy: kv["veth_why"],
		Config: kv["config"], Source: kv["source"], Headers: kv["headers"], NdstKo: kv["ndst_ko"]}
	k.HZ, _ = strconv.Atoi(kv["hz"])
	if m := kv["preempt_models"]; m != "" {
		k.PreemptModels = strings.Split(m, ",")
	}
	k.PreemptBoot = kv["preempt_boot"]
	if k.Release == "" || k.Vmlinuz == "" || (cfg.Module && k.NdstKo == "") {
		return nil, fmt.Errorf("vmrig: unexpected --fetch-only output %q", stdout)
	}
	return k, nil
}

// Run boots the guest once and runs cmds (each one ndst's arguments, or
// GuestBin's) in order.
func Run(ctx context.Context, cfg Config, cmds ...[]string) (*Boot, error) {
	if len(cmds) == 0 {
		return nil, errors.New("vmrig: Run needs at least one command")
	}
	a, err := Args(cfg, cmds...)
	if err != nil {
		return nil, err
	}
	stdout, runErr := runScript(ctx, cfg, a)
	boot, perr := Parse(strings.NewReader(stdout))
	if runErr != nil {
		return boot, runErr
	}
	if perr != nil {
		return nil, fmt.Errorf("vmrig: cannot parse the rig's output: %w", perr)
	}
	if !boot.Done || len(boot.Commands) != len(cmds) {
		return boot, fmt.Errorf("vmrig: the guest ran %d of %d commands (done=%v)", len(boot.Commands), len(cmds), boot.Done)
	}
	return boot, nil
}

// runScript runs vm-run.sh with args; exit status 0 and 1 (a guest command
// failed) give the stdout and a nil error.
func runScript(ctx context.Context, cfg Config, args []string) (string, error) {
	script := cfg.Script
	if script == "" {
		var err error
		if script, err = FindScript(); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	// SIGTERM lets the script's trap stop qemu; SIGKILL only after a delay.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err == nil {
		return stdout.String(), nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return stdout.String(), fmt.Errorf("vmrig: running %s: %w", script, err)
	}
	code := ee.ExitCode()
	if code == 1 {
		return stdout.String(), nil
	}
	e := &Error{Kind: Kind(code), Msg: lastMessage(stderr.String()), Stderr: stderr.String()}
	if ctx.Err() != nil {
		e.Kind = KindGuest
		e.Msg = fmt.Sprintf("stopped: %v (%s)", ctx.Err(), e.Msg)
	}
	return stdout.String(), e
}

// lastMessage returns the script's last "vm-run: " line, without the prefix.
func lastMessage(stderr string) string {
	msg := ""
	for _, l := range strings.Split(stderr, "\n") {
		if m, ok := strings.CutPrefix(l, "vm-run: "); ok {
			msg = m
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(stderr)
	}
	return msg
}
