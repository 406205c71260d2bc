package explain

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// The cases: real kernel log formats of several eras (dmesg, syslog, a
// wall message, journalctl's ISO time, a mail's quotes), each with what
// the caller knows of the kernel.
var cases = []struct {
	file string
	opts Options
	// want are facts the explanation must state, beyond the golden.
	want []string
}{
	{"3.13-negative.log", Options{Running: "3.13.0-68-generic"}, []string{"unbalanced", "line: 2.6.36"}},
	{"4.4-wall.log", Options{Running: "4.4.21-69-default"}, []string{"1 = 1 holder", "undecided"}},
	{"5.10-leak.log", Options{Running: "6.18.0-test"}, []string{"line: 5.10 (the log names the release", "1 = 1 holder", "leak: the count stayed at 1 for 7 warnings over 60 s"}},
	{"6.1-leaked-reference.log", Options{}, []string{"line: 6.1", "2 = 1 holder + the device's own reference", "held by inet6_dev", "ip -6 addr show dev lo"}},
	{"6.6-name-template.log", Options{}, []string{"line: 6.12", "held by xfrm", "ip xfrm state"}},
	{"6.18-netdev-class.log", Options{}, []string{"line: 6.18", "batadv_hardif_add_interface", "reported 2 times", "leak", "namespace reference"}},
	{"slow-release.log", Options{Profile: "6.1"}, []string{"slow-release: the count fell from 4 to 2 over 20 s"}},
	{"netns-busy.log", Options{Profile: "6.18", Mounts: ScanNsfsMounts("testdata/proc")}, []string{"net:[4026533019] at /run/netns/cni-5f1c0a3e in another mount namespace mnt:[4026532301] (pid 812 containerd-shim)", "nsenter -t 812 -m umount /run/netns/cni-5f1c0a3e"}},
}

func TestGolden(t *testing.T) {
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			if strings.Contains(c.file, "busy") && runtime.GOOS != "linux" {
				t.Skip("namespace mounts are Linux's")
			}
			in, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			r := Explain(Parse(string(in)), c.opts)
			var text, js bytes.Buffer
			if err := r.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			enc := json.NewEncoder(&js)
			enc.SetIndent("", "  ")
			if err := enc.Encode(r); err != nil {
				t.Fatal(err)
			}
			base := filepath.Join("testdata", strings.TrimSuffix(c.file, ".log"))
			golden(t, base+".txt", text.Bytes())
			golden(t, base+".json", js.Bytes())
			flat := strings.Join(strings.Fields(text.String()), " ")
			for _, w := range c.want {
				if !strings.Contains(flat, w) {
					t.Errorf("the explanation lacks %q:\n%s", w, text.String())
				}
			}
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./explain -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", path, got)
	}
}

func TestParseFormats(t *testing.T) {
	lg := Parse(strings.Join([]string{
		"[Mon Nov 24 09:12:05 2025] unregister_netdevice: waiting for eth0 to become free. Usage count = 3",
		"[Mon Nov 24 09:12:15 2025] unregister_netdevice: waiting for eth0 to become free. Usage count = 3",
		"random line",
		"  ref_tracker: netdev@ffff8880deadbeef has 2/3 users at",
		"       dst_init+0x1/0x2",
		"       dst_alloc net/core/dst.c:92",
		"",
		"ref_tracker: netdev@ffff8880deadbeef skipped reports about 1/3 users.",
		"CPU: 1 PID: 42 Comm: kworker/u4:1 Not tainted 6.6.15-amd64 #1",
	}, "\n"))
	if len(lg.Waits) != 2 || lg.Waits[1].T-lg.Waits[0].T != 10 || !lg.Waits[0].HasT {
		t.Errorf("waits = %+v, want two 10 s apart (dmesg -T)", lg.Waits)
	}
	if len(lg.Trackers) != 1 || lg.Trackers[0].Users != 2 || lg.Trackers[0].Total != 3 || len(lg.Trackers[0].Stack) != 2 || lg.Trackers[0].Wait != 1 {
		t.Fatalf("trackers = %+v", lg.Trackers)
	}
	if h, o := holderOf(lg.Trackers[0].Stack); h != "dst" || o != "dst_init" {
		t.Errorf("holderOf = %q, %q; want dst, dst_init", h, o)
	}
	if lg.Release != "6.6.15-amd64" {
		t.Errorf("release = %q, want the oops line's", lg.Release)
	}
}

func TestHolderOf(t *testing.T) {
	for _, c := range []struct {
		stack  []string
		holder string
	}{
		{[]string{"__netdev_tracker_alloc", "netdev_hold", "ipv6_add_dev", "addrconf_notify"}, "inet6_dev"},
		{[]string{"netdev_hold", "inetdev_init", "inetdev_event"}, "in_device"},
		{[]string{"netdev_hold", "neigh_parms_alloc", "inetdev_init"}, "arp_parms"},
		{[]string{"netdev_hold", "neigh_parms_alloc", "ipv6_add_dev"}, "nd_parms"},
		{[]string{"netdev_tracker_alloc", "xfrm_dev_state_add", "xfrm_add_sa"}, "xfrm"},
		{[]string{"netdev_hold", "fib6_nh_init", "ip6_route_info_create"}, "route"},
		{[]string{"netdev_hold", "sock_bindtoindex_locked"}, "socket"},
		{[]string{"netdev_hold", "dev_ifsioc", "dev_ioctl"}, ""},
	} {
		var st []Frame
		for _, f := range c.stack {
			st = append(st, Frame{Func: f})
		}
		if h, _ := holderOf(st); h != c.holder {
			t.Errorf("holderOf(%v) = %q, want %q", c.stack, h, c.holder)
		}
	}
}

// TestHoldersAreTheModels: every holder a stack can name is one of package
// netdev's, so the explanation and the emulated kernel speak of the same
// holders.
func TestHoldersAreTheModels(t *testing.T) {
	known := map[string]bool{}
	for _, p := range possible(profile(t, "6.18")) {
		known[p.Name] = true
	}
	for _, r := range holderRules {
		if !known[r.holder] {
			t.Errorf("holder %q is not one of netdev's holders %v", r.holder, known)
		}
	}
}

func TestNothing(t *testing.T) {
	r := Explain(Parse("hello\nworld\n"), Options{Profile: "6.18"})
	if r.Result != "nothing" || len(r.Devices) != 0 {
		t.Errorf("Explain(no warnings) = %+v", r)
	}
	var b bytes.Buffer
	_ = r.WriteText(&b)
	if !strings.Contains(b.String(), "nothing to explain") {
		t.Errorf("text: %s", b.String())
	}
}
