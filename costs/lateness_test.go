package costs

import (
	"strings"
	"testing"
)

func TestHostTimerLateness(t *testing.T) {
	const ok = `{"costs_ns":{},"host":{"hz":250,"cpus":1,"timer_lateness":{"n":100,"min_ns":20000,"p50_ns":90000,"mean_ns":400000,"p99_ns":4000000,"max_ns":6000000,"floor_ns":20000,"groups_ns":[0,50000,3000000]}}}`
	tab, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if l := tab.Host.TimerLateness; l == nil || l.FloorNS != 20000 || len(l.GroupsNS) != 3 || l.P50NS != 90000 {
		t.Fatalf("timer lateness %+v", tab.Host.TimerLateness)
	}
	if tab, err := Parse([]byte(`{"costs_ns":{},"host":{"hz":250,"cpus":2}}`)); err != nil || tab.Host.TimerLateness != nil {
		t.Fatalf("a table without timer lateness: %v, %+v", err, tab)
	}
	for _, bad := range []struct{ from, to, why string }{
		{`[0,50000,3000000]`, `[]`, "no groups"},
		{`[0,50000,3000000]`, `[0,5000,300]`, "must ascend"},
		{`[0,50000,3000000]`, `[-1,50000,3000000]`, "want at least 0 ns and at most"},
		{`[0,50000,3000000]`, `[0,50000,3000000000]`, "want at least 0 ns and at most"},
	} {
		in := strings.Replace(ok, bad.from, bad.to, 1)
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), bad.why) {
			t.Errorf("Parse(%s) = %v, want an error saying %q", in, err, bad.why)
		}
	}
}
