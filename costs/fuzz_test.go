package costs

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics; what it accepts is a valid table (every
// operation known, no cost negative) that survives a JSON round trip
// (it marshals the same again), and what it refuses is refused with an error, never a table.
func FuzzParse(f *testing.F) {
	def, _ := json.Marshal(Default())
	for _, s := range []string{
		string(def),
		`{"source":"calibrate:6.1.0","costs_ns":{"register":300000,"unregister":250000,"free":6000,"unregister_batch":900000,"syscall":5000},"host":{"kernel":"6.1.0","hz":250,"cpus":2,"preempt":"none","gp_latency":{"n":10,"min_ns":1,"p50_ns":2,"mean_ns":3,"p99_ns":4,"max_ns":5}}}`,
		`{"costs_ns":{},"host":{"hz":250,"cpus":2,"stalls":{"threshold_ns":50000,"cpus":2,"spun_ns":2000000000,"count":600,"stalled_ns":50000000,"per_cpu_second":307,"lengths_ns":[50000,70000,2000000]}}}`,
		`{"costs_ns":{},"host":{"stalls":{"per_cpu_second":10}}}`,
		`{"costs_ns":{"register":-1}}`,
		`{"costs_ns":{"bogus":1}}`,
		`{"costs_ns":null}`,
		`{"costs_ns":{"register":1e99}}`,
		`{"extra":{"x":1},"notes":"n"}`,
		`[]`, `null`, `{`, `{"costs_ns":{"register":1}} trailing`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := Parse(b)
		if err != nil {
			if tab != nil {
				t.Fatalf("Parse(%q) = %v and error %v; want no table with an error", b, tab, err)
			}
			return
		}
		if err := tab.Validate(); err != nil {
			t.Fatalf("Parse(%q) accepted a table that Validate refuses: %v", b, err)
		}
		for op, v := range tab.Costs {
			if v < 0 || tab.Lookup(op) != v {
				t.Fatalf("Parse(%q): cost of %s is %d, Lookup %d", b, op, v, tab.Lookup(op))
			}
		}
		out, err := json.Marshal(tab)
		if err != nil {
			t.Fatalf("Marshal(Parse(%q)) = %v", b, err)
		}
		again, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %v; want the table back", b, err)
		}
		// Empty and missing maps marshal alike; compare what is written.
		if out2, _ := json.Marshal(again); !bytes.Equal(out2, out) || !reflect.DeepEqual(again.Costs, tab.Costs) && len(tab.Costs) > 0 {
			t.Fatalf("Parse(Marshal(Parse(%q))) = %+v, want %+v", b, again, tab)
		}
	})
}
