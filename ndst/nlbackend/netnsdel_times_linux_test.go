package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/calltrace"
	"github.com/ndst-project/ndst/ndst/nlbackend/wqtrace"
)

// TestOrdered: a time out of the causal order is made unknown, with why;
// times in order are kept. The cases are the ones real runs printed.
func TestOrdered(t *testing.T) {
	for _, c := range []struct {
		name string
		in   nsTimes
		want nsTimes
		why  bool
	}{
		{"in order", nsTimes{10, 20, 30}, nsTimes{10, 20, 30}, false},
		{"equal", nsTimes{10, 10, 10}, nsTimes{10, 10, 10}, false},
		{"gone unknown", nsTimes{10, 0, 30}, nsTimes{10, 0, 30}, false},
		{"gone before returned (returned read late)", nsTimes{10, 9, 30}, nsTimes{10, 0, 30}, true},
		{"gone after done (the listener late)", nsTimes{10, 40, 30}, nsTimes{10, 0, 30}, true},
		{"done before returned", nsTimes{150, 0, 43}, nsTimes{150, 0, 0}, true},
		{"done before returned, gone kept", nsTimes{10, 20, 5}, nsTimes{10, 20, 0}, true},
	} {
		got, why := ordered(c.in)
		if got != c.want || (why != "") != c.why {
			t.Errorf("%s: ordered(%+v) = %+v, %q; want %+v (a reason: %v)", c.name, c.in, got, why, c.want, c.why)
		}
	}
}

// TestNetnsDelTimesOrdered deletes namespaces with a veth pair each, all at
// once and one at a time, with the kernel's tracepoints and without them
// (the marker namespaces and user-space times): every time reported is
// positive and returned <= gone <= done, the latencies too, and done is
// always measured.
func TestNetnsDelTimesOrdered(t *testing.T) {
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	ctx := context.Background()
	noTrace := func() {
		openCleanupWatch = func(string) (*wqtrace.Watcher, error) { return nil, errors.New("disabled by the test") }
		openCallWatch = func(int, int) (*calltrace.Watcher, error) { return nil, errors.New("disabled by the test") }
	}
	restore := func() { openCleanupWatch, openCallWatch = wqtrace.Open, calltrace.Open }
	defer restore()
	for _, tracepoints := range []bool{true, false} {
		for _, one := range []bool{false, true} {
			name := fmt.Sprintf("tracepoints=%v one-by-one=%v", tracepoints, one)
			restore()
			if !tracepoints {
				noTrace()
			}
			tmpl := netnsTemplate(t)
			if r, err := b.NetnsAdd(ctx, ndst.NetnsAddRequest{Count: 4, Template: tmpl, Veth: true, LoUp: true}); err != nil || r.Count != 4 {
				t.Fatalf("%s: NetnsAdd = %+v, %v", name, r, err)
			}
			r, err := b.NetnsDel(ctx, ndst.NetnsDelRequest{Start: 1, Stop: 4, Template: tmpl, OneByOne: one})
			if err != nil || r.Count != 4 || r.Netns == nil {
				t.Fatalf("%s: NetnsDel = %+v, %v", name, r, err)
			}
			n := r.Netns
			t.Logf("%s: returned %d gone %v done %v; notes %q", name, n.ReturnedNS, ptr(n.GoneNS), ptr(n.DoneNS), r.Notes)
			if n.DoneNS == nil {
				t.Errorf("%s: done not measured", name)
				continue
			}
			if n.ReturnedNS <= 0 || *n.DoneNS < n.ReturnedNS {
				t.Errorf("%s: returned %d, done %d: want 0 < returned <= done", name, n.ReturnedNS, *n.DoneNS)
			}
			if tracepoints && n.GoneNS == nil {
				t.Errorf("%s: gone not measured with the tracepoints", name)
			}
			if g := n.GoneNS; g != nil && (*g < n.ReturnedNS || *g > *n.DoneNS) {
				t.Errorf("%s: gone %d out of order (returned %d, done %d)", name, *g, n.ReturnedNS, *n.DoneNS)
			}
			for what, l := range map[string]*ndst.Latency{"latency": r.Latency, "gone": n.Gone, "done": n.Done} {
				if l != nil && l.MinNS < 0 {
					t.Errorf("%s: %s min %d < 0", name, what, l.MinNS)
				}
			}
			if r.Latency == nil || r.Latency.MinNS <= 0 {
				t.Errorf("%s: latency %+v, want the delete-to-done times, all positive", name, r.Latency)
			}
		}
	}
}

func ptr(p *int64) any {
	if p == nil {
		return "-"
	}
	return *p
}
