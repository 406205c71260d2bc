//go:build linux

package hostknob

import (
	"bufio"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"strings"

	"github.com/ndst-project/ndst/knob"
	"github.com/ndst-project/ndst/safefile"
)

// The files read besides the knobs' own; tests point them elsewhere.
var (
	cmdlineFile   = "/proc/cmdline"
	osReleaseFile = "/proc/sys/kernel/osrelease"
	procConfigGz  = "/proc/config.gz"
	bootConfigDir = "/boot"
	root          = "" // prefix of every path (tests)
)

// maxConfig bounds a kernel configuration read (a few hundred KiB).
const maxConfig = 4 << 20

type host struct {
	cmdline      string
	cmdlineErr   error
	config       map[string]string
	configSource string
}

func newHost() *host {
	h := &host{}
	b, err := safefile.ReadKernelFile(root + cmdlineFile)
	h.cmdline, h.cmdlineErr = string(b), err
	h.config, h.configSource = readConfig()
	return h
}

func (h *host) read(d *knob.Def) Reading {
	r := Reading{Name: d.Name}
	switch {
	case d.Kind == knob.Build:
		if h.configSource == "" {
			r.Missing = "no kernel configuration readable (" + procConfigGz + ", " + bootConfigDir + "/config-RELEASE)"
			return r
		}
		v, ok := h.config[d.Name]
		switch {
		case !ok && d.Type == knob.Bool:
			v = "n" // "# CONFIG_X is not set", or absent from this kernel
		case !ok:
			r.Missing = "not in the kernel's configuration"
			return r
		}
		r.Value, r.Missing = normalize(d, v)
		r.Source = h.configSource
		return r
	case d.Path != "" && !strings.HasPrefix(d.Path, "/sys/kernel/debug/"):
		b, err := safefile.ReadKernelFile(root + d.Path)
		if err == nil {
			r.Value, r.Missing = normalize(d, string(b))
			r.Source = d.Path
			return r
		}
		if !errors.Is(err, fs.ErrNotExist) {
			r.Missing = err.Error()
			return r
		}
		if d.Kind == knob.Runtime {
			r.Missing = "this kernel has no " + d.Path
			return r
		}
	}
	// A boot parameter without a file (or whose file this kernel lacks):
	// the command line, if it names it.
	if h.cmdlineErr != nil {
		r.Missing = "the kernel command line cannot be read: " + h.cmdlineErr.Error()
		return r
	}
	v, ok := cmdlineValue(h.cmdline, d.Name)
	if !ok && d.Name == knob.NoCBs && h.config["CONFIG_RCU_NOCB_CPU_DEFAULT_ALL"] == "y" {
		r.Value, r.Source = "all", h.configSource+" (CONFIG_RCU_NOCB_CPU_DEFAULT_ALL=y)"
		return r
	}
	if !ok {
		r.Missing = "not on the kernel command line (the kernel's default)"
		return r
	}
	r.Value, r.Missing = normalize(d, v)
	r.Source = cmdlineFile
	return r
}

// readConfig reads the kernel's configuration: /proc/config.gz, else
// /boot/config-RELEASE; only CONFIG_ lines with a value are kept.
func readConfig() (map[string]string, string) {
	if f, err := safefile.Open(root+procConfigGz, safefile.FollowLinks); err == nil {
		defer f.Close()
		if zr, err := gzip.NewReader(f); err == nil {
			if cfg := parseConfig(io.LimitReader(zr, maxConfig)); len(cfg) > 0 {
				return cfg, procConfigGz
			}
		}
	}
	if b, err := safefile.ReadKernelFile(root + osReleaseFile); err == nil {
		p := bootConfigDir + "/config-" + strings.TrimSpace(string(b))
		if f, err := safefile.Open(root+p, safefile.FollowLinks); err == nil {
			defer f.Close()
			if cfg := parseConfig(io.LimitReader(f, maxConfig)); len(cfg) > 0 {
				return cfg, p
			}
		}
	}
	return nil, ""
}

func parseConfig(r io.Reader) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.HasPrefix(k, "CONFIG_") {
			cfg[k] = strings.Trim(v, `"`)
		}
	}
	return cfg
}
