package nlbackend

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/ndst/nlbackend/pseudofs"
	"github.com/ndst-project/ndst/safefile"
)

// HostFacts is what can be read about the running kernel without measuring.
// Zero values mean "not readable".
type HostFacts struct {
	Kernel   string `json:"kernel,omitempty"`
	HZ       int    `json:"hz,omitempty"`
	HZSource string `json:"hz_source,omitempty"`
	CPUs     int    `json:"cpus"`
	// Preempt is the kernel's word for the preemption model in force:
	// none, voluntary, full, lazy or rt.
	Preempt       string `json:"preempt,omitempty"`
	PreemptSource string `json:"preempt_source,omitempty"`
	// PreemptRCU is CONFIG_PREEMPT_RCU: preemptible RCU, whatever model
	// the kernel booted with.
	PreemptRCU bool `json:"preempt_rcu,omitempty"`
}

// Host probing reads these files; tests point them elsewhere.
var (
	procConfigGz  = "/proc/config.gz"
	bootConfigDir = "/boot"
	osReleaseFile = "/proc/sys/kernel/osrelease"
	versionFile   = "/proc/sys/kernel/version"
	cmdlineFile   = "/proc/cmdline"
	cpuOnlineFile = "/sys/devices/system/cpu/online"
	debugPreempt  = defaultDebugPreempt
	realtimeFile  = "/sys/kernel/realtime"
)

const defaultDebugPreempt = "/sys/kernel/debug/sched/preempt"

// ProbeHost reads HZ (from /proc/config.gz or /boot/config-RELEASE), the
// number of online CPUs and the preemption model (see probePreempt).
func ProbeHost() HostFacts {
	var h HostFacts
	if b, err := safefile.ReadKernelFile(osReleaseFile); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	cfg, cfgSource := readKernelConfig(h.Kernel)
	if v, err := strconv.Atoi(cfg["CONFIG_HZ"]); err == nil && v > 0 {
		h.HZ, h.HZSource = v, cfgSource
	}
	h.CPUs = runtime.NumCPU()
	if b, err := safefile.ReadKernelFile(cpuOnlineFile); err == nil {
		if n := countCPUList(strings.TrimSpace(string(b))); n > 0 {
			h.CPUs = n
		}
	}
	h.Preempt, h.PreemptSource = probePreempt(cfg, cfgSource)
	h.PreemptRCU = cfg["CONFIG_PREEMPT_RCU"] == "y"
	return h
}

// probePreempt names the preemption model in force and where it was read,
// from the strongest evidence down:
//  1. PREEMPT_RT: CONFIG_PREEMPT_RT=y, /sys/kernel/realtime reading 1 (the
//     RT patch set's file) or PREEMPT_RT in uname -v. It comes first: from
//     6.13 an RT kernel can be PREEMPT_DYNAMIC too, and debugfs then names
//     its dynamic mode (full or lazy), not rt.
//  2. /sys/kernel/debug/sched/preempt, when debugfs is mounted: the mode a
//     PREEMPT_DYNAMIC kernel runs in now (it can be changed at run time).
//  3. The last valid preempt= on the command line of a PREEMPT_DYNAMIC kernel
//     (known from its config, or from uname -v when no config is readable);
//     the kernel ignores preempt= otherwise.
//  4. The model the config is built with (a PREEMPT_DYNAMIC kernel's boot
//     default).
//  5. uname -v alone: PREEMPT without PREEMPT_DYNAMIC is full. With
//     PREEMPT_DYNAMIC and nothing else, or no flag (none or voluntary), the
//     model is not known: "".
//
// uname -v carries SMP and one preemption flag (init/Makefile: PREEMPT for
// PREEMPT_BUILD, replaced by PREEMPT_DYNAMIC, replaced by PREEMPT_RT).
func probePreempt(cfg map[string]string, cfgSource string) (string, string) {
	var version []string
	if b, err := safefile.ReadKernelFile(versionFile); err == nil {
		version = strings.Fields(string(b))
	}
	uname := "uname -v (" + versionFile + ")"
	switch {
	case cfg["CONFIG_PREEMPT_RT"] == "y":
		return "rt", cfgSource
	case realtimeKernel():
		return "rt", realtimeFile
	case slices.Contains(version, "PREEMPT_RT"):
		return "rt", uname
	}
	if b, src, ok := readDebugPreempt(); ok {
		if m := parseDebugPreempt(string(b)); m != "" {
			return m, src
		}
	}
	dynamic, dynamicFrom := cfg["CONFIG_PREEMPT_DYNAMIC"] == "y", "its config"
	if len(cfg) == 0 && slices.Contains(version, "PREEMPT_DYNAMIC") {
		dynamic, dynamicFrom = true, uname
	}
	if dynamic {
		if b, err := safefile.ReadKernelFile(cmdlineFile); err == nil {
			if m := cmdlinePreempt(string(b)); m != "" {
				return m, "preempt= on the kernel command line (PREEMPT_DYNAMIC, from " + dynamicFrom + ")"
			}
		}
	}
	if m := configPreempt(cfg); m != "" {
		src := cfgSource
		if cfg["CONFIG_PREEMPT_DYNAMIC"] == "y" {
			src += ", the boot default of a PREEMPT_DYNAMIC kernel; debugfs not readable"
		}
		return m, src
	}
	if slices.Contains(version, "PREEMPT") {
		return "full", uname
	}
	return "", ""
}

// readDebugPreempt reads sched/preempt of debugfs: where the host mounts it,
// else (root) from a private mount of debugfs (package pseudofs).
func readDebugPreempt() ([]byte, string, bool) {
	if b, err := safefile.ReadKernelFile(debugPreempt); err == nil {
		return b, debugPreempt, true
	}
	if debugPreempt != defaultDebugPreempt || pseudofs.HostMount(pseudofs.Debugfs) != "" {
		return nil, "", false // a test's file, or debugfs mounted without it
	}
	files, src, err := pseudofs.Read(pseudofs.Debugfs, "sched/preempt")
	if b, ok := files["sched/preempt"]; err == nil && ok {
		return b, debugPreempt + " (" + src + ")", true
	}
	return nil, "", false
}

// realtimeKernel reports whether /sys/kernel/realtime reads 1.
func realtimeKernel() bool {
	b, err := safefile.ReadKernelFile(realtimeFile)
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// cmdlinePreempt is the model the last valid preempt= on a kernel command
// line selects: the kernel applies each in turn and warns about, and skips,
// a mode it does not know.
func cmdlinePreempt(cmdline string) string {
	m := ""
	for _, f := range strings.Fields(cmdline) {
		if f == "--" {
			break // the rest goes to init
		}
		if v, ok := strings.CutPrefix(f, "preempt="); ok {
			switch v {
			case "none", "voluntary", "full", "lazy":
				m = v
			}
		}
	}
	return m
}

// parseDebugPreempt reads /sys/kernel/debug/sched/preempt, which lists the
// models with the one in force in parentheses: "none (voluntary) full".
func parseDebugPreempt(s string) string {
	for _, f := range strings.Fields(s) {
		if len(f) > 2 && f[0] == '(' && f[len(f)-1] == ')' {
			return f[1 : len(f)-1]
		}
	}
	return ""
}

// configPreempt derives the preemption model a kernel boots with from its
// configuration.
func configPreempt(cfg map[string]string) string {
	switch {
	case cfg["CONFIG_PREEMPT_RT"] == "y":
		return "rt"
	case cfg["CONFIG_PREEMPT_LAZY"] == "y":
		return "lazy"
	case cfg["CONFIG_PREEMPT"] == "y":
		return "full"
	case cfg["CONFIG_PREEMPT_VOLUNTARY"] == "y":
		return "voluntary"
	case cfg["CONFIG_PREEMPT_NONE"] == "y":
		return "none"
	}
	return ""
}

// maxKernelConfig bounds how much of a kernel configuration is read (a
// distribution's is about 300 KB).
const maxKernelConfig = 16 << 20

// readKernelConfig returns the kernel configuration as CONFIG_X -> value,
// and the file it came from.
func readKernelConfig(release string) (map[string]string, string) {
	if f, err := safefile.Open(procConfigGz, safefile.FollowLinks); err == nil {
		defer f.Close()
		if zr, err := gzip.NewReader(f); err == nil {
			if cfg := parseConfig(io.LimitReader(zr, maxKernelConfig)); len(cfg) > 0 {
				return cfg, procConfigGz
			}
		}
	}
	if release != "" {
		p := bootConfigDir + "/config-" + release
		if f, err := safefile.Open(p, safefile.FollowLinks); err == nil {
			defer f.Close()
			if cfg := parseConfig(io.LimitReader(f, maxKernelConfig)); len(cfg) > 0 {
				return cfg, p
			}
		}
	}
	return map[string]string{}, ""
}

// parseConfig reads the "CONFIG_HZ=" and "CONFIG_PREEMPT..." lines of a
// kernel configuration; everything else is skipped. It stops early: the
// preemption model (kernel/Kconfig.preempt) and CONFIG_HZ (kernel/Kconfig.hz)
// come in the first eighth or so of a configuration of 4,000 lines, and
// decompressing the rest of /proc/config.gz is most of what probing the host
// costs. It stops once CONFIG_HZ and the preemption model's choice (a
// CONFIG_PREEMPT_*=y line) are known and either CONFIG_PREEMPT_DYNAMIC has
// been seen (set or "is not set"; it follows the choice in Kconfig.preempt)
// or 64 lines have passed since the choice (kernels without the option).
func parseConfig(r io.Reader) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(r)
	line, choiceAt, haveDynamic := 0, -1, false
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if bytes.Equal(b, []byte("# CONFIG_PREEMPT_DYNAMIC is not set")) {
			haveDynamic = true
		}
		if bytes.HasPrefix(b, []byte("CONFIG_HZ=")) || bytes.HasPrefix(b, []byte("CONFIG_PREEMPT")) {
			if k, v, ok := bytes.Cut(b, []byte("=")); ok {
				key := string(k)
				cfg[key] = strings.Trim(string(v), `"`)
				switch key {
				case "CONFIG_PREEMPT_DYNAMIC":
					haveDynamic = true
				case "CONFIG_PREEMPT_NONE", "CONFIG_PREEMPT_VOLUNTARY", "CONFIG_PREEMPT", "CONFIG_PREEMPT_LAZY", "CONFIG_PREEMPT_RT":
					if choiceAt < 0 && cfg[key] == "y" {
						choiceAt = line
					}
				}
			}
		}
		if _, hz := cfg["CONFIG_HZ"]; hz && choiceAt >= 0 && (haveDynamic || line-choiceAt > 64) {
			break
		}
	}
	return cfg
}

// countCPUList counts the CPUs of a list such as "0-3,5,7-8"; 0 if malformed.
func countCPUList(s string) int {
	if s == "" {
		return 0
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}
