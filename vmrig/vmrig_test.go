package vmrig

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const goodOutput = `@@ndst-vm host accel=tcg cpus=2 preempt=full release=6.1.0-57-amd64 hz=250 kernel=linux-image-6.1.0-57-amd64 6.1.192-3 (Debian)
@@ndst-vm module dummy loaded
@@ndst-vm module veth loaded
@@ndst-vm module ndst loaded
@@ndst-vm guest release=6.1.0-57-amd64 cpus=2 preempt=full uptime=1.91
@@ndst-vm begin 1 add 3
added 3
second line
@@ndst-vm stderr 1
@@ndst-vm kmsg 1
[    3.418662] unregister_netdevice: waiting for ndst1 to become free. Usage count = 2
[    4.571029] unregister_netdevice: waiting for ndst1 to become free. Usage count = 2
@@ndst-vm end 1 exit=0 seconds=0.25
@@ndst-vm begin 2 del 1 9
@@ndst-vm stderr 2
ndst: no device in range
@@ndst-vm end 2 exit=1 seconds=0.02
@@ndst-vm dmesg
[    0.000000] Linux version 6.1.0-57-amd64
[    8.270341] ndst: unloaded
@@ndst-vm done
@@ndst-vm host wall_ms=5732
`

func TestParse(t *testing.T) {
	b, err := Parse(strings.NewReader(goodOutput))
	if err != nil {
		t.Fatalf("Parse(good) error = %v, want nil", err)
	}
	want := &Boot{
		Host: map[string]string{"accel": "tcg", "cpus": "2", "preempt": "full", "release": "6.1.0-57-amd64", "hz": "250",
			"kernel": "linux-image-6.1.0-57-amd64 6.1.192-3 (Debian)", "wall_ms": "5732"},
		Guest:   map[string]string{"release": "6.1.0-57-amd64", "cpus": "2", "preempt": "full", "uptime": "1.91"},
		Module:  "dummy loaded",
		Modules: []string{"dummy loaded", "veth loaded", "ndst loaded"},
		Commands: []CommandResult{
			{Index: 1, Args: "add 3", Stdout: "added 3\nsecond line\n", Exit: 0, Seconds: 0.25, KernelLog: []string{
				"[    3.418662] unregister_netdevice: waiting for ndst1 to become free. Usage count = 2",
				"[    4.571029] unregister_netdevice: waiting for ndst1 to become free. Usage count = 2",
			}},
			{Index: 2, Args: "del 1 9", Stderr: "ndst: no device in range\n", Exit: 1, Seconds: 0.02},
		},
		Done:      true,
		KernelLog: []string{"[    0.000000] Linux version 6.1.0-57-amd64", "[    8.270341] ndst: unloaded"},
	}
	if !reflect.DeepEqual(b, want) {
		t.Errorf("Parse(good) = %+v, want %+v", b, want)
	}
	if got := b.Wall(); got != 5732*time.Millisecond {
		t.Errorf("Boot.Wall() = %v, want 5.732s", got)
	}
}

func TestModuleState(t *testing.T) {
	b, err := Parse(strings.NewReader("@@ndst-vm module dummy loaded\n@@ndst-vm module veth absent: kernel 9.9 has no veth.ko and its config has no CONFIG_VETH=y\n@@ndst-vm module vethx loaded\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"dummy": "loaded",
		"veth":  "absent: kernel 9.9 has no veth.ko and its config has no CONFIG_VETH=y",
		"vethx": "loaded",
		"ndst":  "",
		"veth:": "",
	} {
		if got := b.ModuleState(name); got != want {
			t.Errorf("ModuleState(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"end without begin", "@@ndst-vm end 1 exit=0\n", "outside its command"},
		{"begin out of order", "@@ndst-vm begin 2 x\n", "want command 1"},
		{"nested begin", "@@ndst-vm begin 1 x\n@@ndst-vm begin 2 y\n", "begin inside command 1"},
		{"end of another command", "@@ndst-vm begin 1 x\n@@ndst-vm end 2 exit=0\n", "outside its command"},
		{"stderr of another command", "@@ndst-vm begin 1 x\n@@ndst-vm stderr 2\n", "outside its command"},
		{"bad exit", "@@ndst-vm begin 1 x\n@@ndst-vm end 1 exit=zero\n", "valid exit="},
		{"done inside a command", "@@ndst-vm begin 1 x\n@@ndst-vm done\n", "done inside"},
		{"unknown marker", "@@ndst-vm frobnicate\n", "unknown marker"},
		{"kmsg before stderr", "@@ndst-vm begin 1 x\n@@ndst-vm kmsg 1\n", "before its stderr"},
		{"kmsg of another command", "@@ndst-vm begin 1 x\n@@ndst-vm stderr 1\n@@ndst-vm kmsg 2\n", "outside its command"},
		{"kmsg outside a command", "@@ndst-vm kmsg 1\n", "outside its command"},
		{"dmesg inside a command", "@@ndst-vm begin 1 x\n@@ndst-vm dmesg\n", "dmesg inside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error = %v, want one containing %q", tc.in, err, tc.wantErr)
			}
		})
	}
}

func TestParsePartial(t *testing.T) {
	// A guest that stops mid-command: the finished commands are kept.
	in := "@@ndst-vm begin 1 a\n@@ndst-vm stderr 1\n@@ndst-vm end 1 exit=0 seconds=1\n@@ndst-vm begin 2 b\npartial\n@@ndst-vm host wall_ms=9\n"
	b, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatalf("Parse(partial) error = %v, want nil", err)
	}
	if len(b.Commands) != 1 || b.Done {
		t.Errorf("Parse(partial) = %d commands, done=%v; want 1, false", len(b.Commands), b.Done)
	}
}

func TestFields(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"a=1 b=2", map[string]string{"a": "1", "b": "2"}},
		{"a=x y z b=", map[string]string{"a": "x y z", "b": ""}},
		{"stray a=1", map[string]string{"a": "1"}},
		{"a=b=c", map[string]string{"a": "b=c"}},
	}
	for _, tc := range tests {
		if got := fields(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("fields(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		cmds    [][]string
		want    []string
		wantErr string
	}{
		{"defaults", Config{}, [][]string{{"list"}}, []string{"--", "list"}, ""},
		{"all", Config{CPUs: 2, Preempt: "full", Kernel: "k.deb", Timeout: 1500 * time.Millisecond, GuestBin: "/g"},
			[][]string{{"add", "3"}, {"list"}},
			[]string{"--cpus", "2", "--preempt", "full", "--kernel", "k.deb", "--timeout", "2", "--guest-bin", "/g", "--", "add", "3", ";;", "list"}, ""},
		{"no commands", Config{CPUs: 1}, nil, []string{"--cpus", "1"}, ""},
		{"package", Config{Package: "linux-image-rt-amd64", Preempt: "rt"}, [][]string{{"list"}},
			[]string{"--preempt", "rt", "--package", "linux-image-rt-amd64", "--", "list"}, ""},
		{"module, shell and dmesg", Config{Module: true, Headers: "/h", Shell: true, Dmesg: true}, [][]string{{"echo", "1", ">", "add"}},
			[]string{"--module", "--headers", "/h", "--shell", "--dmesg", "--", "echo", "1", ">", "add"}, ""},
		{"empty command", Config{}, [][]string{{"list"}, {}}, nil, "command 2 is empty"},
		{"separator inside", Config{}, [][]string{{"a", ";;", "b"}}, nil, "contains the separator"},
		{"negative timeout", Config{Timeout: -time.Second}, [][]string{{"list"}}, nil, "negative timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Args(tc.cfg, tc.cmds...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("Args(%+v, %q) error = %v, want one containing %q", tc.cfg, tc.cmds, err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Args(%+v, %q) = %q, %v; want %q, nil", tc.cfg, tc.cmds, got, err, tc.want)
			}
		})
	}
}

// fakeBzImage writes a file with just enough of a bzImage setup header for
// the script to read the kernel release from it.
func fakeBzImage(t *testing.T, path, release string) {
	t.Helper()
	b := make([]byte, 2048)
	copy(b[0x202:], "HdrS")
	const off = 0x300 // version string at off+0x200
	binary.LittleEndian.PutUint16(b[0x20e:], off)
	copy(b[off+0x200:], release+" (fake@test) #1 SMP\x00")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeDeb builds a Debian package holding files (path: content); with a
// "boot/config-REL" entry it also holds a fake boot/vmlinuz-REL.
func fakeDeb(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		t.Skip("dpkg-deb not found: not a Debian host")
	}
	root := filepath.Join(dir, name+"-root")
	ctl := "Package: " + name + "\nVersion: 1\nArchitecture: amd64\nMaintainer: test <test@example.invalid>\nDescription: fake\n"
	all := map[string]string{"DEBIAN/control": ctl, "usr/share/doc/" + name + "/README": "fake\n"}
	for p, c := range files {
		all[p] = c
	}
	for p, c := range all {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if rel, ok := strings.CutPrefix(p, "boot/config-"); ok {
			fakeBzImage(t, filepath.Join(root, "boot", "vmlinuz-"+rel), rel)
		}
		if rest, ok := strings.CutPrefix(p, "usr/lib/modules/"); ok && strings.HasSuffix(rest, "/config") {
			rel := strings.TrimSuffix(rest, "/config")
			fakeBzImage(t, filepath.Join(root, "usr/lib/modules", rel, "vmlinuz"), rel)
		}
	}
	deb := filepath.Join(dir, name+".deb")
	if out, err := exec.Command("dpkg-deb", "-b", "-Zgzip", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -b: %v: %s", err, out)
	}
	return deb
}

// TestVMRunBadInput checks the fault paths that need neither qemu nor a
// kernel download: each must exit with its kind and a clear message.
func TestVMRunBadInput(t *testing.T) {
	script, err := FindScript()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	noDummy := filepath.Join(dir, "nodummy", "vmlinuz")
	builtin := filepath.Join(dir, "builtin", "vmlinuz")
	for _, p := range []string{noDummy, builtin} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeBzImage(t, noDummy, "9.9.9-nodummy")
	if err := os.WriteFile(filepath.Join(dir, "nodummy", "config-9.9.9-nodummy"), []byte("CONFIG_HZ=250\n# CONFIG_DUMMY is not set\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeBzImage(t, builtin, "9.9.9-builtin")
	if err := os.WriteFile(filepath.Join(dir, "builtin", "config-9.9.9-builtin"), []byte("CONFIG_HZ=1000\nCONFIG_DUMMY=y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Kernels by preemption model: PREEMPT_DYNAMIC built voluntary (Debian's
	// stock config), PREEMPT_RT (Debian's rt config), and a kernel built full
	// without PREEMPT_DYNAMIC.
	models := map[string]string{
		"dynamic": "CONFIG_HZ=250\nCONFIG_DUMMY=y\n# CONFIG_PREEMPT_NONE is not set\nCONFIG_PREEMPT_VOLUNTARY=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n",
		"rt":      "CONFIG_HZ=250\nCONFIG_DUMMY=y\nCONFIG_PREEMPT_LAZY=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_RT=y\n",
		"full":    "CONFIG_HZ=100\nCONFIG_DUMMY=y\nCONFIG_PREEMPT=y\n",
	}
	modelKernel := map[string]string{}
	for name, cfg := range models {
		p := filepath.Join(dir, name, "vmlinuz")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		fakeBzImage(t, p, "9.9.9-"+name)
		if err := os.WriteFile(filepath.Join(dir, name, "config-9.9.9-"+name), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		modelKernel[name] = p
	}
	notKernel := filepath.Join(dir, "garbage")
	if err := os.WriteFile(notKernel, []byte("not a kernel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	debNoKernel := fakeDeb(t, dir, "nokernel", nil)
	debNoDummy := fakeDeb(t, dir, "nodummyk", map[string]string{"boot/config-9.9.9-deb": "CONFIG_HZ=100\n"})
	debNoHeaders := fakeDeb(t, dir, "linux-image-9.9.9-ndst-test", map[string]string{"boot/config-9.9.9-ndst-test": "CONFIG_HZ=100\nCONFIG_DUMMY=y\n"})
	// A split image's layout (Debian 7.x: vmlinuz and config under
	// usr/lib/modules/RELEASE), a 7.x release built lazy.
	split := fakeDeb(t, dir, "linux-binary-7.9.9-split", map[string]string{
		"usr/lib/modules/7.9.9-split/config": "CONFIG_HZ=250\nCONFIG_DUMMY=y\nCONFIG_PREEMPT_LAZY=y\nCONFIG_PREEMPT_DYNAMIC=y\nCONFIG_ARCH_HAS_PREEMPT_LAZY=y\n"})
	env := []string{"NDST_VM_CACHE=" + filepath.Join(dir, "cache"), "TMPDIR=" + dir}
	// apt through a proxy that refuses connections: Debian's registry is unreachable.
	badAPT := filepath.Join(dir, "apt.conf")
	if err := os.WriteFile(badAPT, []byte("Acquire::http::Proxy \"http://127.0.0.1:9\";\nAcquire::https::Proxy \"http://127.0.0.1:9\";\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		env      []string
		wantKind Kind // 0: success
		wantMsg  string
	}{
		{"missing kernel file", []string{"--kernel", filepath.Join(dir, "nope"), "--", "list"}, nil, KindUsage, "no such file"},
		{"zero cpus", []string{"--cpus", "0", "--", "list"}, nil, KindUsage, "--cpus '0'"},
		{"cpus not a number", []string{"--cpus", "2x", "--", "list"}, nil, KindUsage, "--cpus '2x'"},
		{"too many cpus", []string{"--cpus", "65", "--", "list"}, nil, KindUsage, "--cpus '65'"},
		{"bad preempt", []string{"--preempt", "fast", "--", "list"}, nil, KindUsage, "--preempt 'fast': want none, voluntary, full, lazy or rt"},
		{"lazy on a kernel without it", []string{"--fetch-only", "--preempt", "lazy", "--kernel", modelKernel["dynamic"]}, nil, KindUsage,
			"--preempt lazy: kernel 9.9.9-dynamic boots none, voluntary, full only"},
		{"none on an RT kernel", []string{"--fetch-only", "--preempt", "none", "--kernel", modelKernel["rt"]}, nil, KindUsage,
			"--preempt none: kernel 9.9.9-rt boots rt only"},
		{"rt on a stock kernel", []string{"--fetch-only", "--preempt", "rt", "--kernel", modelKernel["dynamic"]}, nil, KindUsage, "boots none, voluntary, full only"},
		{"none on a kernel built full", []string{"--fetch-only", "--preempt", "none", "--kernel", modelKernel["full"]}, nil, KindUsage,
			"boots full only (its config: boot model full, not PREEMPT_DYNAMIC)"},
		{"bad package name", []string{"--package", "firefox", "--", "list"}, nil, KindUsage, "--package 'firefox': want a Debian kernel image package name"},
		{"package and kernel", []string{"--package", "linux-image-amd64", "--kernel", notKernel, "--", "list"}, nil, KindUsage, "exclude each other"},
		{"package apt does not know", []string{"--fetch-only", "--package", "linux-image-ndst-no-such-flavour"}, []string{"NDST_VM_CACHE=" + filepath.Join(dir, "emptycache")},
			KindKernel, "cannot resolve linux-image-ndst-no-such-flavour"},
		{"bad timeout", []string{"--timeout", "-1", "--", "list"}, nil, KindUsage, "--timeout '-1'"},
		{"bad suite", []string{"--fetch-only", "--suite", "Bad_Suite"}, nil, KindUsage, "--suite: not a Debian suite name"},
		{"split image, 7.x boots full and lazy", []string{"--fetch-only", "--preempt", "none", "--kernel", split}, nil, KindUsage,
			"--preempt none: kernel 7.9.9-split boots full, lazy only"},
		{"no command", []string{"--cpus", "1"}, nil, KindUsage, "no command given"},
		{"empty command", []string{"--", "list", ";;", ";;", "list"}, nil, KindUsage, "empty command"},
		{"unknown option", []string{"--smp", "2", "--", "list"}, nil, KindUsage, "unknown option '--smp'"},
		{"option without value", []string{"--cpus"}, nil, KindUsage, "--cpus needs a value"},
		{"no qemu", []string{"--", "list"}, []string{"NDST_QEMU=/nonexistent/qemu"}, KindHost, "qemu not found"},
		{"busybox not static", []string{"--", "list"}, []string{"NDST_QEMU=bash", "NDST_BUSYBOX=/bin/bash"}, KindHost, "dynamically linked"},
		{"not a kernel", []string{"--fetch-only", "--kernel", notKernel}, nil, KindKernel, "neither a Debian package nor a bzImage"},
		{"kernel without dummy.ko", []string{"--fetch-only", "--kernel", noDummy}, nil, KindKernel, "has no dummy.ko"},
		{"registry unreachable", []string{"--fetch-only"}, []string{"APT_CONFIG=" + badAPT, "NDST_VM_CACHE=" + filepath.Join(dir, "emptycache")}, KindKernel, "Debian's registry"},
		{"package without a kernel", []string{"--fetch-only", "--kernel", debNoKernel}, nil, KindKernel, "not a kernel image package"},
		{"package without dummy.ko", []string{"--fetch-only", "--kernel", debNoDummy}, nil, KindKernel, "has no dummy.ko"},
		{"kernel with dummy built in", []string{"--fetch-only", "--kernel", builtin}, nil, 0, ""},
		{"headers without module", []string{"--headers", dir, "--", "list"}, nil, KindUsage, "--headers is for --module"},
		{"headers not a build tree", []string{"--module", "--headers", dir, "--", "list"}, nil, KindUsage, "not a kernel build tree"},
		{"shell and guest-bin", []string{"--shell", "--guest-bin", notKernel, "--", "true"}, nil, KindUsage, "exclude each other"},
		{"module, bare vmlinuz without headers", []string{"--fetch-only", "--module", "--kernel", builtin}, nil, KindKernel, "no kernel headers for 9.9.9-builtin"},
		{"module, headers unknown to apt", []string{"--fetch-only", "--module", "--kernel", debNoHeaders}, nil, KindKernel, "no kernel headers for 9.9.9-ndst-test: apt does not know linux-headers-9.9.9-ndst-test 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := Config{Script: script, Env: append(append([]string{}, env...), tc.env...)}
			out, err := runScript(ctx, cfg, tc.args)
			if tc.wantKind == 0 {
				if err != nil {
					t.Fatalf("vm-run.sh %q error = %v, want nil", tc.args, err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != tc.wantKind || !strings.Contains(e.Msg, tc.wantMsg) {
				t.Errorf("vm-run.sh %q = %v (stdout %q), want %s error containing %q", tc.args, err, out, tc.wantKind, tc.wantMsg)
			}
			if strings.Contains(e.Msg, "\n") {
				t.Errorf("vm-run.sh %q message = %q, want one line", tc.args, e.Msg)
			}
		})
	}

	// The built-in case through Fetch: module "builtin", HZ from the config.
	k, err := Fetch(context.Background(), Config{Script: script, Kernel: builtin, Env: env})
	if err != nil || k.Module != "builtin" || k.HZ != 1000 || k.Release != "9.9.9-builtin" || k.PreemptModels != nil || k.PreemptBoot != "" {
		t.Errorf("Fetch(builtin) = %+v, %v; want module builtin, HZ 1000, release 9.9.9-builtin, no preemption models (its config names none)", k, err)
	}
	if err == nil && (k.Veth != "none" || !strings.Contains(k.VethWhy, "no veth.ko and its config has no CONFIG_VETH=y")) {
		t.Errorf("Fetch(builtin) veth = %q (%q), want none: no veth.ko and no CONFIG_VETH=y", k.Veth, k.VethWhy)
	}
	// The preemption models each kernel boots.
	for name, want := range map[string]struct {
		models []string
		boot   string
	}{"dynamic": {[]string{"none", "voluntary", "full"}, "voluntary"}, "rt": {[]string{"rt"}, "rt"}, "full": {[]string{"full"}, "full"}} {
		k, err := Fetch(context.Background(), Config{Script: script, Kernel: modelKernel[name], Env: env})
		if err != nil || !reflect.DeepEqual(k.PreemptModels, want.models) || k.PreemptBoot != want.boot {
			t.Errorf("Fetch(%s) = %+v, %v; want preemption models %q, boot %q", name, k, err, want.models, want.boot)
		}
	}
}

func TestSkippable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&Error{Kind: KindHost}, true},
		{&Error{Kind: KindKernel}, true},
		{&Error{Kind: KindGuest}, false},
		{&Error{Kind: KindUsage}, false},
		{errors.New("other"), false},
		{nil, false},
	}
	for _, tc := range tests {
		if got := Skippable(tc.err); got != tc.want {
			t.Errorf("Skippable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestVMRunVethStaging checks, without qemu, where the rig finds veth.ko:
// beside a bare vmlinuz, built in (CONFIG_VETH=y), absent, and in a kernel
// package, including a package cached by an older rig without veth.ko,
// which is completed in place (its vmlinuz untouched).
func TestVMRunVethStaging(t *testing.T) {
	script, err := FindScript()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	env := []string{"NDST_VM_CACHE=" + cache, "TMPDIR=" + dir}
	fetch := func(kernel string) *Kernel {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		k, err := Fetch(ctx, Config{Script: script, Kernel: kernel, Env: env})
		if err != nil {
			t.Fatalf("Fetch(%s) error = %v", kernel, err)
		}
		return k
	}
	bare := func(name, config string, modules ...string) string {
		t.Helper()
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, "vmlinuz")
		fakeBzImage(t, p, "9.9.9-"+name)
		if config != "" {
			if err := os.WriteFile(filepath.Join(d, "config-9.9.9-"+name), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, m := range modules {
			if err := os.WriteFile(filepath.Join(d, m), []byte("fake "+m), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}

	k := fetch(bare("beside", "CONFIG_DUMMY=m\nCONFIG_VETH=m\n", "dummy.ko", "veth.ko"))
	if want := filepath.Join(dir, "beside", "veth.ko"); k.Veth != want {
		t.Errorf("Fetch(vmlinuz with veth.ko beside) veth = %q, want %q", k.Veth, want)
	}
	k = fetch(bare("vethy", "CONFIG_DUMMY=y\nCONFIG_VETH=y\n"))
	if k.Veth != "builtin" || k.VethWhy != "" {
		t.Errorf("Fetch(CONFIG_VETH=y) veth = %q (%q), want builtin", k.Veth, k.VethWhy)
	}
	k = fetch(bare("noconfig", "", "dummy.ko"))
	if k.Veth != "none" || !strings.Contains(k.VethWhy, "no config to say whether CONFIG_VETH=y") {
		t.Errorf("Fetch(no veth.ko, no config) veth = %q (%q), want none for want of a config", k.Veth, k.VethWhy)
	}

	const rel = "9.9.9-vethdeb"
	mods := "lib/modules/" + rel + "/kernel/drivers/net/"
	deb := fakeDeb(t, dir, "linux-image-"+rel, map[string]string{
		"boot/config-" + rel: "CONFIG_HZ=250\nCONFIG_DUMMY=m\nCONFIG_VETH=m\n",
		mods + "dummy.ko":    "fake dummy",
		mods + "veth.ko":     "fake veth",
	})
	k = fetch(deb)
	staged := filepath.Dir(k.Vmlinuz)
	if k.Veth != filepath.Join(staged, "veth.ko") {
		t.Fatalf("Fetch(deb with veth.ko) veth = %q, want veth.ko in %s", k.Veth, staged)
	}
	if b, err := os.ReadFile(k.Veth); err != nil || string(b) != "fake veth" {
		t.Errorf("staged veth.ko = %q, %v; want the package's", b, err)
	}
	// A folder staged before veth.ko was: no veth.ko and no 'staged' list.
	for _, f := range []string{"veth.ko", "staged"} {
		if err := os.Remove(filepath.Join(staged, f)); err != nil {
			t.Fatal(err)
		}
	}
	before, err := os.Stat(k.Vmlinuz)
	if err != nil {
		t.Fatal(err)
	}
	k = fetch(deb)
	if k.Veth != filepath.Join(staged, "veth.ko") {
		t.Errorf("Fetch(deb cached without veth.ko) veth = %q, want it completed in %s", k.Veth, staged)
	}
	if after, err := os.Stat(k.Vmlinuz); err != nil || !os.SameFile(before, after) {
		t.Errorf("Fetch(deb cached without veth.ko) replaced the cached vmlinuz (%v); want the folder completed in place", err)
	}
	if b, err := os.ReadFile(filepath.Join(staged, "staged")); err != nil || !strings.Contains(string(b), "veth") {
		t.Errorf("staged list = %q, %v; want it to name veth", b, err)
	}

	// A package without veth.ko and without CONFIG_VETH=y: none, and the
	// next fetch does not try again (the folder is complete).
	deb = fakeDeb(t, dir, "linux-image-9.9.9-noveth", map[string]string{"boot/config-9.9.9-noveth": "CONFIG_HZ=100\nCONFIG_DUMMY=y\n"})
	k = fetch(deb)
	if k.Veth != "none" || !strings.Contains(k.VethWhy, "kernel 9.9.9-noveth has no veth.ko and its config has no CONFIG_VETH=y") {
		t.Errorf("Fetch(deb without veth) veth = %q (%q), want none with the reason", k.Veth, k.VethWhy)
	}
}
