package emu

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/safefile"
)

// osRelease is where the running kernel's release is read.
var osRelease = "/proc/sys/kernel/osrelease"

// AutoProfile is --profile auto: the line a cost table's calibration chose,
// else the line of the kernel release it names, else the line of the running
// kernel. It says which and why.
func AutoProfile(t *costs.Table) (string, string, error) {
	if t != nil && t.Host != nil {
		if t.Host.Profile != "" {
			if _, ok := netdev.Profiles[t.Host.Profile]; ok {
				return t.Host.Profile, fmt.Sprintf("auto: the line the calibration %q chose for kernel %s", t.Source, t.Host.Kernel), nil
			}
		}
		if t.Host.Kernel != "" {
			line, why, err := netdev.ProfileForRelease(t.Host.Kernel)
			return line, "auto: " + why + " (the cost table's kernel)", err
		}
	}
	b, err := safefile.ReadKernelFile(osRelease)
	if err != nil {
		return "", "", fmt.Errorf("--profile auto: no cost table names a kernel, and the running kernel's release cannot be read (%v); give --profile %s", err, strings.Join(netdev.ProfileNames, "|"))
	}
	line, why, err := netdev.ProfileForRelease(strings.TrimSpace(string(b)))
	if err != nil {
		return "", "", fmt.Errorf("--profile auto: %w", err)
	}
	return line, "auto: " + why + " (the running kernel)", nil
}
