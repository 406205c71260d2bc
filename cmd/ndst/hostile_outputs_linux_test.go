package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The hostile suite, outputs: every file ndst writes, against a link to a
// victim file, a kernel setting as the target, and a full disk.

// outputFlags are every command line that writes a file named by the user,
// P standing for the path. ENOSPC marks those cheap enough to run to the
// write in the full-disk test (calibrate and predict --save-costs measure
// the real kernel for minutes first; their path goes through the same
// safefile.WriteOutput, and is checked before they start).
var outputFlags = []struct {
	name   string
	args   string
	enospc bool
}{
	{"--state", "--state P add 3", true},
	{"--trace", "--trace P add 3", true},
	{"bench --export-json", "bench --count 2 --runs 1 --export-json P", true},
	{"bench --export-csv", "bench --count 2 --runs 1 --export-csv P", true},
	{"bench --export-markdown", "bench --count 2 --runs 1 --export-markdown P", true},
	{"bench --plot", "bench --count 2 --runs 1 --plot P", true},
	{"calibrate -o", "calibrate -o P", false},
	{"predict --save-costs", "predict --save-costs P", false},
}

// outputArgs is the command line of f with P replaced by path (and .svg for
// a plot, whose format comes from the name).
func outputArgs(args, path string) []string {
	if strings.Contains(args, "--plot") {
		path += ".svg"
	}
	var out []string
	for _, a := range strings.Fields(args) {
		if a == "P" {
			a = path
		}
		out = append(out, a)
	}
	return out
}

// TestOutputsNeverFollowALink: each output named by a link to a victim file
// is refused before the run, naming the link's target; the victim keeps its
// content and the link stays a link. (A trace once overwrote /etc/hostname
// this way.)
func TestOutputsNeverFollowALink(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	bin := buildNdst(t)
	for _, f := range outputFlags {
		t.Run(f.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(dir, "hostname")
			os.WriteFile(victim, []byte("victim\n"), 0o644)
			args := outputArgs(f.args, filepath.Join(dir, "out"))
			var link string
			for _, a := range args {
				if strings.HasPrefix(a, dir) {
					link = a
				}
			}
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runBin(t, bin, args...)
			if code != 1 && code != 2 {
				t.Errorf("exit %d, want 1 or 2; stdout %q stderr %q", code, out, errOut)
			}
			if !strings.Contains(errOut, "symbolic link (to "+victim+")") {
				t.Errorf("stderr %q; want it to say the path is a link to %s", errOut, victim)
			}
			if b, _ := os.ReadFile(victim); string(b) != "victim\n" {
				t.Errorf("the link's target now holds %q", b)
			}
			if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link is now %v, %v", fi, err)
			}
		})
	}
}

// TestOutputsNeverOnAPseudoFileSystem: each output named as a kernel
// setting (/proc/sys/kernel/hostname) or a new file in sysfs is refused,
// saying why, and the host name is unchanged. As root the commands run in
// the sandbox, whose UTS namespace is the only one a bug could rename;
// unprivileged, the kernel would refuse the write anyway.
func TestOutputsNeverOnAPseudoFileSystem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	targets := []string{"/proc/sys/kernel/hostname", "/sys/kernel/ndst-out"}
	if os.Geteuid() == 0 {
		var script strings.Builder
		for _, f := range outputFlags {
			for _, p := range targets {
				fmt.Fprintf(&script, "echo '== %s %s'; \"$NDST\" %s 2>&1 && echo 'exit 0' || echo \"exit $?\"; hostname\n",
					f.name, p, strings.Join(outputArgs(f.args, p), " "))
			}
		}
		out, code := sandbox(t, 5*time.Minute, script.String())
		if code != 0 {
			t.Fatalf("sandbox exit %d:\n%s", code, out)
		}
		for _, block := range strings.Split(out, "== ")[1:] {
			checkPseudoRefusal(t, block)
		}
		return
	}
	bin := buildNdst(t)
	for _, f := range outputFlags {
		for _, p := range targets {
			out, errOut, code := runBin(t, bin, outputArgs(f.args, p)...)
			checkPseudoRefusal(t, fmt.Sprintf("%s %s\n%s%s\nexit %d\n", f.name, p, out, errOut, code))
		}
	}
}

// checkPseudoRefusal checks one command's transcript: refused (exit 1 or
// 2) saying the path is on a kernel pseudo file system, and, in the
// sandbox, the host name as it was.
func checkPseudoRefusal(t *testing.T, block string) {
	t.Helper()
	first, _, _ := strings.Cut(block, "\n")
	if !strings.Contains(block, "exit 1\n") && !strings.Contains(block, "exit 2\n") {
		t.Errorf("%s: not refused with exit 1 or 2:\n%s", first, block)
	}
	if !strings.Contains(block, "a kernel pseudo file system") {
		t.Errorf("%s: the refusal does not say the path is on a kernel pseudo file system:\n%s", first, block)
	}
	if os.Geteuid() == 0 && !strings.HasSuffix(strings.TrimSpace(block), "ndst-sandbox") {
		t.Errorf("%s: the sandbox's host name changed:\n%s", first, block)
	}
}

// TestOutputsOnAFullDisk: each output whose write fails (a full tmpfs, in
// the sandbox) leaves the old file with its old content and no temporary
// file, and the command exits 1 saying so. (A failed trace once destroyed
// the old file and exited 0.)
func TestOutputsOnAFullDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the ndst binary")
	}
	var script strings.Builder
	script.WriteString(`mkdir "$T/full"; mount -t tmpfs -o size=256k ndst-full "$T/full"
`)
	for i, f := range outputFlags {
		if !f.enospc {
			continue
		}
		args := outputArgs(f.args, fmt.Sprintf("$T/full/out%d", i))
		if f.name == "--state" { // an old state of 3 devices, written while there was room
			fmt.Fprintf(&script, "\"$NDST\" %s >/dev/null\n", strings.Join(args, " "))
		} else {
			fmt.Fprintf(&script, "echo old > %s\n", pathArg(args))
		}
	}
	script.WriteString(`dd if=/dev/zero of="$T/full/fill" bs=4k 2>/dev/null || true
`)
	for i, f := range outputFlags {
		if !f.enospc {
			continue
		}
		args := outputArgs(f.args, fmt.Sprintf("$T/full/out%d", i))
		check := "cksum < " + pathArg(args)
		if f.name == "--state" { // the old state, whole: its 3 devices listed
			check = fmt.Sprintf("\"$NDST\" --state %s list | grep -c ' dummy ' || true", pathArg(args))
		}
		fmt.Fprintf(&script, "echo '== %s'; \"$NDST\" %s 2>&1 && echo 'exit 0' || echo \"exit $?\"; %s; ls -a \"$T/full\" | grep -c tmp || true\n",
			f.name, strings.Join(args, " "), check)
	}
	// The checksums of the old files, for comparison.
	script.WriteString(`echo '== old'; echo old | cksum
`)
	out, code := sandbox(t, 5*time.Minute, script.String())
	if code != 0 {
		t.Fatalf("sandbox exit %d:\n%s", code, out)
	}
	blocks := strings.Split(out, "== ")[1:]
	oldSum := strings.TrimSpace(strings.TrimPrefix(blocks[len(blocks)-1], "old"))
	for _, block := range blocks[:len(blocks)-1] {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		name, sum, tmps := lines[0], lines[len(lines)-2], lines[len(lines)-1]
		if !strings.Contains(block, "exit 1\n") || !strings.Contains(block, "no space left on device") || !strings.Contains(block, "left as it was") {
			t.Errorf("%s: want exit 1 saying the disk is full and the old file was kept:\n%s", name, block)
		}
		if want := map[bool]string{true: "3", false: oldSum}[name == "--state"]; sum != want {
			t.Errorf("%s: the old file's checksum (devices, for the state) is now %q, want %q:\n%s", name, sum, want, block)
		}
		if tmps != "0" {
			t.Errorf("%s: %s temporary files left:\n%s", name, tmps, block)
		}
	}
}

// pathArg is the argument of args that is the output's path.
func pathArg(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "$T/") {
			return a
		}
	}
	panic("no path in " + strings.Join(args, " "))
}
