package nlbackend

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseDebugPreempt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"none voluntary (full) lazy\n", "full"},
		{"(none) voluntary full\n", "none"},
		{"none (voluntary) full", "voluntary"},
		{"none voluntary full", ""},
		{"", ""},
		{"()", ""},
	}
	for _, tt := range tests {
		if got := parseDebugPreempt(tt.in); got != tt.want {
			t.Errorf("parseDebugPreempt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCountCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"0", 1}, {"0-1", 2}, {"0-3,5,7-8", 7}, {"", 0}, {"x", 0}, {"3-1", 0}, {"0-", 0},
	}
	for _, tt := range tests {
		if got := countCPUList(tt.in); got != tt.want {
			t.Errorf("countCPUList(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestConfigPreempt(t *testing.T) {
	tests := []struct {
		cfg  string
		want string
	}{
		{"CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n", "none"},
		{"# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n", "voluntary"},
		{"CONFIG_PREEMPT=y\n", "full"},
		{"CONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT=y\n", "lazy"},
		{"CONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT=y\n", "rt"},
		{"CONFIG_HZ=250\n", ""},
	}
	for _, tt := range tests {
		if got := configPreempt(parseConfig(strings.NewReader(tt.cfg))); got != tt.want {
			t.Errorf("configPreempt(%q) = %q, want %q", tt.cfg, got, tt.want)
		}
	}
}

// TestProbeHostFiles points the probe at made-up files.
func TestProbeHostFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gz := filepath.Join(dir, "config.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte("CONFIG_HZ_250=y\nCONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\n"))
	zw.Close()
	f.Close()

	saved := []*string{&procConfigGz, &bootConfigDir, &osReleaseFile, &versionFile, &cmdlineFile, &cpuOnlineFile, &debugPreempt}
	old := make([]string, len(saved))
	for i, p := range saved {
		old[i] = *p
	}
	t.Cleanup(func() {
		for i, p := range saved {
			*p = old[i]
		}
	})
	procConfigGz = gz
	bootConfigDir = dir
	osReleaseFile = write("osrelease", "6.18.0-test\n")
	versionFile = write("version", "#1 SMP PREEMPT_DYNAMIC\n")
	cmdlineFile = write("cmdline", "quiet preempt=full\n")
	cpuOnlineFile = write("online", "0-3\n")
	debugPreempt = filepath.Join(dir, "missing")

	h := ProbeHost()
	if h.Kernel != "6.18.0-test" || h.HZ != 250 || h.CPUs != 4 || h.Preempt != "full" {
		t.Errorf("ProbeHost() = %+v, want kernel 6.18.0-test, HZ 250, 4 CPUs, preempt full (from cmdline)", h)
	}

	// No cmdline override: the configured boot default.
	cmdlineFile = write("cmdline", "quiet\n")
	if h := ProbeHost(); h.Preempt != "none" || !strings.Contains(h.PreemptSource, "PREEMPT_DYNAMIC") {
		t.Errorf("ProbeHost().Preempt = %q from %q, want none from the config's boot default", h.Preempt, h.PreemptSource)
	}

	// debugfs wins.
	debugPreempt = write("preempt", "none (voluntary) full\n")
	if h := ProbeHost(); h.Preempt != "voluntary" {
		t.Errorf("ProbeHost().Preempt = %q, want voluntary (debugfs)", h.Preempt)
	}

	// No /proc/config.gz: /boot/config-RELEASE.
	procConfigGz = filepath.Join(dir, "missing.gz")
	write("config-6.18.0-test", "CONFIG_HZ=1000\n")
	if h := ProbeHost(); h.HZ != 1000 || !strings.HasSuffix(h.HZSource, "config-6.18.0-test") {
		t.Errorf("ProbeHost() HZ = %d from %q, want 1000 from /boot/config-6.18.0-test", h.HZ, h.HZSource)
	}
}

// TestParseConfigStopsEarly: the parser stops once it knows CONFIG_HZ and
// the preemption model, and reads on when they come in another order.
func TestParseConfigStopsEarly(t *testing.T) {
	cfg := parseConfig(strings.NewReader("CONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_X=1\nCONFIG_HZ=250\nCONFIG_PREEMPT_LATE=y\n"))
	if cfg["CONFIG_HZ"] != "250" || cfg["CONFIG_PREEMPT_NONE"] != "y" || cfg["CONFIG_PREEMPT_DYNAMIC"] != "y" {
		t.Errorf("parseConfig = %v, want HZ 250, PREEMPT_NONE and PREEMPT_DYNAMIC", cfg)
	}
	if _, read := cfg["CONFIG_PREEMPT_LATE"]; read {
		t.Errorf("parseConfig read on past CONFIG_HZ: %v", cfg)
	}
	// HZ first, then the choice: the dynamic option that follows is read.
	cfg = parseConfig(strings.NewReader("CONFIG_HZ=1000\nCONFIG_A=1\nCONFIG_PREEMPT_VOLUNTARY=y\nCONFIG_PREEMPT_COUNT=y\nCONFIG_PREEMPT_DYNAMIC=y\n"))
	if cfg["CONFIG_HZ"] != "1000" || configPreempt(cfg) != "voluntary" || cfg["CONFIG_PREEMPT_DYNAMIC"] != "y" {
		t.Errorf("parseConfig (HZ first) = %v, want HZ 1000, voluntary, dynamic", cfg)
	}
	// A kernel without PREEMPT_DYNAMIC: read 64 lines past the choice.
	var b strings.Builder
	b.WriteString("CONFIG_PREEMPT=y\nCONFIG_HZ=100\n")
	for i := range 40 {
		fmt.Fprintf(&b, "CONFIG_FILL%d=y\n", i)
	}
	b.WriteString("CONFIG_PREEMPT_NOTIFIERS=y\n")
	for i := range 40 {
		fmt.Fprintf(&b, "CONFIG_MORE%d=y\n", i)
	}
	b.WriteString("CONFIG_PREEMPT_TRACER=y\n")
	cfg = parseConfig(strings.NewReader(b.String()))
	if cfg["CONFIG_PREEMPT_NOTIFIERS"] != "y" || cfg["CONFIG_PREEMPT_TRACER"] != "" || configPreempt(cfg) != "full" {
		t.Errorf("parseConfig (no dynamic option) = %v, want lines up to 64 past the choice only", cfg)
	}
}
