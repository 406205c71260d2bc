package explain

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/safefile"
)

// ScanNsfsMounts lists the mounts of namespace files (file system nsfs)
// that the processes under procDir ("/proc") see, one entry per mount per
// mount namespace; a process it cannot read is skipped. Nothing is changed.
func ScanNsfsMounts(procDir string) []NsfsMount {
	ents, err := os.ReadDir(procDir)
	if err != nil {
		return []NsfsMount{}
	}
	own, _ := os.Readlink(filepath.Join(procDir, "self", "ns", "mnt"))
	seen := map[string]bool{}
	out := []NsfsMount{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := filepath.Join(procDir, e.Name())
		mntns, err := os.Readlink(filepath.Join(dir, "ns", "mnt"))
		if err != nil || seen[mntns] {
			continue
		}
		b, err := safefile.ReadKernelFile(filepath.Join(dir, "mountinfo"))
		if err != nil {
			continue
		}
		seen[mntns] = true
		comm := ""
		if c, err := safefile.ReadKernelFile(filepath.Join(dir, "comm")); err == nil {
			comm = strings.TrimSpace(string(c))
		}
		for _, l := range strings.Split(string(b), "\n") {
			// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
			pre, post, ok := strings.Cut(l, " - ")
			if !ok || !strings.HasPrefix(post, "nsfs ") {
				continue
			}
			f := strings.Fields(pre)
			if len(f) < 5 || !strings.HasPrefix(f[3], "net:") {
				continue
			}
			out = append(out, NsfsMount{Ns: f[3], MountPoint: unescape(f[4]), MountNs: mntns, PID: pid, Comm: comm, Own: mntns == own})
		}
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
