package advise

import (
	"strings"
	"testing"

	"github.com/ndst-project/ndst/costs"
	"github.com/ndst-project/ndst/ndst"
)

// TestExtrapolationNote: a batched delete beyond a calibrated table's
// fitted sizes gets the table's check (size and emulated error); within
// them, one by one, namespaces, addressed devices, the built-in table:
// nothing. A table from before the check says it has none.
func TestExtrapolationNote(t *testing.T) {
	tab := &costs.Table{Extra: map[string]int64{
		"batch_delete_100_ns": 25_368_289, "batch_delete_300_ns": 42_577_461, "batch_delete_per_device_ns": 86_045,
		"batch_delete_cpu_fixed_ns": 0, "closure_check_del1000_permille": 161,
	}}
	n := extrapolationNote(tab, Workload{Devices: 1000})
	for _, want := range []string{"up to 300 devices", "a batched delete of 1000 devices", "+16.1%", "this batch of 1000"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q: want %q in it", n, want)
		}
	}
	for _, w := range []Workload{{Devices: 300}, {Devices: 1000, OneByOne: true}, {Namespaces: 1000}, {Devices: 1000, Addrs: &ndst.Addrs{Up: true, V6: 1}}} {
		if n := extrapolationNote(tab, w); n != "" {
			t.Errorf("%+v: note %q, want none", w, n)
		}
	}
	if n := extrapolationNote(nil, Workload{Devices: 1000}); n != "" {
		t.Errorf("the built-in table: note %q, want none", n)
	}
	delete(tab.Extra, "closure_check_del1000_permille")
	if n := extrapolationNote(tab, Workload{Devices: 1000}); !strings.Contains(n, "has no check") {
		t.Errorf("a table without a check: note %q, want it said", n)
	}
}
