package costs

import (
	"strings"
	"testing"
)

func TestHostStalls(t *testing.T) {
	const ok = `{"costs_ns":{},"host":{"hz":250,"cpus":2,"stalls":{"threshold_ns":50000,"cpus":2,"spun_ns":2000000000,"count":600,"stalled_ns":50000000,"per_cpu_second":307,"lengths_ns":[50000,70000,2000000]}}}`
	tab, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if s := tab.Host.Stalls; s == nil || s.PerSecond != 307 || len(s.LengthsNS) != 3 {
		t.Fatalf("stalls %+v", tab.Host.Stalls)
	}
	if tab, err := Parse([]byte(`{"costs_ns":{},"host":{"hz":250,"cpus":2}}`)); err != nil || tab.Host.Stalls != nil {
		t.Fatalf("a table without stalls: %v, %+v", err, tab)
	}
	for _, bad := range []struct{ from, to, why string }{
		{`"per_cpu_second":307`, `"per_cpu_second":-1`, "stall rate"},
		{`"per_cpu_second":307`, `"per_cpu_second":1e9`, "stall rate"},
		{`,"lengths_ns":[50000,70000,2000000]`, ``, "needs the stall lengths"},
		{`[50000,70000,2000000]`, `[50000,7000,2000000]`, "ascend"},
		{`[50000,70000,2000000]`, `[0,70000,2000000]`, "above 0"},
		{`[50000,70000,2000000]`, `[50000,70000,2000000000]`, "at most"},
		{`"stalled_ns":50000000`, `"stalled_ns":5000000000`, "not above the spun time"},
		{`"count":600`, `"count":600,"one_busy":{"per_cpu_second":5}`, "one CPU busy: a stall rate"},
	} {
		in := strings.Replace(ok, bad.from, bad.to, 1)
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("Parse(%s) = %v, want an error saying %q", in, err, bad.why)
		}
	}
}
