package nlbackend

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pointProbe points the host probe's files at the given paths for the rest
// of the test ("" for a file that is absent) and restores them afterwards.
func pointProbe(t *testing.T, files map[*string]string) {
	t.Helper()
	all := []*string{&procConfigGz, &bootConfigDir, &osReleaseFile, &versionFile, &cmdlineFile, &cpuOnlineFile, &debugPreempt, &realtimeFile}
	old := make([]string, len(all))
	for i, p := range all {
		old[i] = *p
	}
	t.Cleanup(func() {
		for i, p := range all {
			*p = old[i]
		}
	})
	missing := filepath.Join(t.TempDir(), "missing")
	for _, p := range all {
		*p = missing
	}
	for p, v := range files {
		if v != "" {
			*p = v
		}
	}
}

// writeTemp writes content to a new file and returns its path.
func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProbePreemptRecorded runs the probe on files recorded on real kernels
// (testdata/preempt/README.md says where each comes from): Debian's 6.1
// stock kernel (PREEMPT_DYNAMIC, built voluntary) booted with each preempt=,
// Debian's 6.1 PREEMPT_RT kernel, and this project's 6.18 machines
// (PREEMPT_DYNAMIC, built none, debugfs not mounted), each with some of the
// sources taken away.
func TestProbePreemptRecorded(t *testing.T) {
	const stock, rt, host = "testdata/preempt/debian-6.1.0-57-amd64", "testdata/preempt/debian-6.1.0-57-rt-amd64", "testdata/preempt/host-6.18"
	stockFiles := func(cmdline, debug string, config bool) map[*string]string {
		m := map[*string]string{
			&osReleaseFile: writeTemp(t, "osrelease", "6.1.0-57-amd64\n"),
			&versionFile:   stock + "/version",
			&cmdlineFile:   stock + "/" + cmdline,
		}
		if debug != "" {
			m[&debugPreempt] = stock + "/" + debug
		}
		if config {
			m[&bootConfigDir] = stock
		}
		return m
	}
	rtFiles := func(config, realtime, version bool) map[*string]string {
		m := map[*string]string{
			&osReleaseFile: writeTemp(t, "osrelease", "6.1.0-57-rt-amd64\n"),
			&cmdlineFile:   rt + "/cmdline",
		}
		if config {
			m[&bootConfigDir] = rt
		}
		if realtime {
			m[&realtimeFile] = rt + "/realtime"
		}
		if version {
			m[&versionFile] = rt + "/version"
		}
		return m
	}
	tests := []struct {
		name       string
		files      map[*string]string
		want       string
		wantSource string
	}{
		{"6.1 preempt=none, debugfs", stockFiles("cmdline-none", "debug-preempt-none", true), "none", "debug-preempt-none"},
		{"6.1 preempt=voluntary, debugfs", stockFiles("cmdline-voluntary", "debug-preempt-voluntary", true), "voluntary", "debug-preempt-voluntary"},
		{"6.1 preempt=full, debugfs", stockFiles("cmdline-full", "debug-preempt-full", true), "full", "debug-preempt-full"},
		{"6.1 preempt=full, no debugfs", stockFiles("cmdline-full", "", true), "full", "preempt= on the kernel command line (PREEMPT_DYNAMIC, from its config)"},
		{"6.1 no preempt=, no debugfs: the config's boot default", stockFiles("cmdline", "", true), "voluntary", "the boot default of a PREEMPT_DYNAMIC kernel"},
		{"6.1 preempt=none, no config, no debugfs: uname -v says dynamic", stockFiles("cmdline-none", "", false), "none", "PREEMPT_DYNAMIC, from uname -v"},
		{"6.1 no config, no debugfs, no preempt=: not known", stockFiles("cmdline", "", false), "", ""},
		{"6.1 rt, config", rtFiles(true, true, true), "rt", "config-6.1.0-57-rt-amd64"},
		{"6.1 rt, no config", rtFiles(false, true, true), "rt", "/realtime"},
		{"6.1 rt, uname -v only", rtFiles(false, false, true), "rt", "uname -v"},
		{"6.18 host, config.gz", map[*string]string{&procConfigGz: host + "/config.gz", &versionFile: host + "/version", &cmdlineFile: host + "/cmdline"},
			"none", "the boot default of a PREEMPT_DYNAMIC kernel"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pointProbe(t, tc.files)
			h := ProbeHost()
			if h.Preempt != tc.want || !strings.Contains(h.PreemptSource, tc.wantSource) {
				t.Errorf("ProbeHost() preempt = %q from %q, want %q from a source containing %q", h.Preempt, h.PreemptSource, tc.want, tc.wantSource)
			}
			if tc.want == "rt" && !h.PreemptRCU && tc.files[&bootConfigDir] != "" {
				t.Errorf("ProbeHost() PreemptRCU = false on an RT kernel's config, want true")
			}
		})
	}
}

// TestProbePreemptMade covers kernels this project has no recording of.
func TestProbePreemptMade(t *testing.T) {
	tests := []struct {
		name                    string
		config, version, debug  string
		cmdline                 string
		want, wantSourceContain string
	}{
		// 6.13+: PREEMPT_RT outside the model choice, PREEMPT_DYNAMIC between full and lazy.
		{"rt and dynamic: debugfs says full", "CONFIG_PREEMPT=y\nCONFIG_PREEMPT_RT=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=1000\n",
			"#1 SMP PREEMPT_RT", "none voluntary (full) lazy\n", "", "rt", "config-"},
		{"lazy, debugfs", "CONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\n", "#1 SMP PREEMPT_DYNAMIC", "none voluntary full (lazy)\n", "", "lazy", "debug"},
		{"lazy from the command line", "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\n", "#1 SMP PREEMPT_DYNAMIC", "", "preempt=lazy", "lazy", "command line"},
		{"the last valid preempt= wins", "CONFIG_PREEMPT_NONE=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_HZ=250\n", "#1 SMP PREEMPT_DYNAMIC", "",
			"preempt=full preempt=voluntary preempt=bogus -- preempt=none", "voluntary", "command line"},
		{"preempt= on a kernel that is not dynamic", "CONFIG_PREEMPT=y\n# CONFIG_PREEMPT_DYNAMIC is not set\nCONFIG_HZ=100\n", "#1 SMP PREEMPT", "", "preempt=none", "full", "config-"},
		{"uname -v PREEMPT, no config", "", "#1 SMP PREEMPT Tue", "", "", "full", "uname -v"},
		{"uname -v without a flag, no config", "", "#1 SMP Tue", "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[*string]string{
				&osReleaseFile: writeTemp(t, "osrelease", "6.13.0-test\n"),
				&versionFile:   writeTemp(t, "version", tc.version+"\n"),
				&cmdlineFile:   writeTemp(t, "cmdline", "quiet "+tc.cmdline+"\n"),
			}
			if tc.config != "" {
				files[&bootConfigDir] = filepath.Dir(writeTemp(t, "config-6.13.0-test", tc.config))
			}
			if tc.debug != "" {
				files[&debugPreempt] = writeTemp(t, "preempt", tc.debug)
			}
			pointProbe(t, files)
			h := ProbeHost()
			if h.Preempt != tc.want || !strings.Contains(h.PreemptSource, tc.wantSourceContain) {
				t.Errorf("ProbeHost() preempt = %q from %q, want %q from a source containing %q", h.Preempt, h.PreemptSource, tc.want, tc.wantSourceContain)
			}
		})
	}
}

func TestCmdlinePreempt(t *testing.T) {
	tests := []struct{ in, want string }{
		{"quiet preempt=full", "full"},
		{"preempt=none preempt=lazy", "lazy"},
		{"preempt=full preempt=rt", "full"},
		{"preempt=", ""},
		{"quiet -- preempt=none", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := cmdlinePreempt(tt.in); got != tt.want {
			t.Errorf("cmdlinePreempt(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
