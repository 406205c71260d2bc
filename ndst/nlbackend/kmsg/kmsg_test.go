package kmsg

import (
	"errors"
	"slices"
	"testing"
)

func TestParseRecord(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Record
	}{
		{"0,4711,4188155557,-;unregister_netdevice: waiting for A to become free. Usage count = 2\n",
			Record{Seq: 4711, Level: 0, TimeUS: 4188155557, Text: "unregister_netdevice: waiting for A to become free. Usage count = 2"}},
		{"3,12,5,-,caller=T12;ref_tracker: netdev@00000000deadbeef has 1/1 users at\\x0a     dev_get_by_index+0x1/0x2\\x0a\n SUBSYSTEM=net\n DEVICE=n3\n",
			Record{Seq: 12, Level: 3, TimeUS: 5, Text: "ref_tracker: netdev@00000000deadbeef has 1/1 users at\n     dev_get_by_index+0x1/0x2\n"}},
		{"30,1,2,c;a \\x5c backslash and \\xzz kept\n", Record{Seq: 1, Facility: 3, Level: 6, TimeUS: 2, Text: `a \ backslash and \xzz kept`}},
	} {
		got, err := ParseRecord([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("ParseRecord(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "no header", "1,2;x", "a,b,c,-;x", "1,2,-3,-;x", "99999999999,1,1,-;x"} {
		if _, err := ParseRecord([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseRecord(%q) error = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestLines(t *testing.T) {
	r := Record{TimeUS: 10048007, Text: "ref_tracker: netdev@x has 1/1 users at\n     dev_get_by_index+0x1/0x2\n"}
	want := []string{"[   10.048007] ref_tracker: netdev@x has 1/1 users at", "[   10.048007]      dev_get_by_index+0x1/0x2"}
	if got := r.Lines(); !slices.Equal(got, want) {
		t.Errorf("Lines() = %q, want %q", got, want)
	}
}

func TestTeardownAndWaiting(t *testing.T) {
	for _, tc := range []struct {
		text     string
		teardown bool
		name     string
		usage    int
		ok       bool
	}{
		{"unregister_netdevice: waiting for ifb3 to become free. Usage count = 2", true, "ifb3", 2, true},
		{"unregister_netdevice: waiting for lo to become free. Usage count = 1", true, "lo", 1, true},
		{"ref_tracker: netdev@000000003c1e0b5a has 1/2 users at", true, "", 0, false},
		{"waiting for ifb3 to become free", true, "ifb3", 0, false},
		{"eth0: link up", false, "", 0, false},
		{"unregister_netdevice: waiting for a b to become free. Usage count = 2", true, "", 0, false},
	} {
		if got := Teardown(tc.text); got != tc.teardown {
			t.Errorf("Teardown(%q) = %v, want %v", tc.text, got, tc.teardown)
		}
		name, usage, ok := Waiting(tc.text)
		if name != tc.name || usage != tc.usage || ok != tc.ok {
			t.Errorf("Waiting(%q) = %q, %d, %v; want %q, %d, %v", tc.text, name, usage, ok, tc.name, tc.usage, tc.ok)
		}
	}
}
