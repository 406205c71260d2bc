package advise

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/bench"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/phase"
)

// Why a lever changes the time, in one line, from the two runs' own
// accounting: the phase whose time moved most (where the deleting task
// was: a grace period, rcu_barrier, the wait loop, waiting for the
// namespace cleanup), per device or namespace, and the counters behind it
// (grace periods, expedited ones, FQS scans, sleeps, cleanup runs).

// evaluate fills the lever's times and reason from its record against the
// baseline's.
func (l *Lever) evaluate(base *bench.Record, w Workload) {
	r := l.record
	if r.NotApplicable != "" {
		l.NotApplicable = r.NotApplicable
		return
	}
	l.BeforeNS, l.AfterNS = timeOf(base), timeOf(r)
	l.Result = resultOf(r)
	l.SavedNS = l.BeforeNS - l.AfterNS
	if l.BeforeNS > 0 {
		l.Saved = float64(l.SavedNS) / float64(l.BeforeNS)
	}
	if l.Result != ndst.ResultOK {
		l.Reason = failureText(r)
		return
	}
	l.Reason = reason(base, r, w)
}

// timeOf is a record's predicted time: the median delete, or for
// namespaces the median time to the cleanup's end.
func timeOf(r *bench.Record) int64 {
	if r.OK == 0 {
		if len(r.Samples) > 0 {
			return r.Samples[0].DelNS
		}
		return 0
	}
	return r.MedianNS
}

func failureText(r *bench.Record) string {
	for _, s := range r.Samples {
		if s.Error != "" {
			return s.Result + ": " + s.Error
		}
	}
	return resultOf(r)
}

func phaseTotal(r *bench.Record) map[string]float64 {
	m := map[string]float64{}
	for _, p := range r.Phases {
		m[p.Name] += p.CPUNS + p.WaitNS
	}
	return m
}

// reasonCounters are the counters a reason may name, with their words.
var reasonCounters = []struct{ key, words string }{
	{"grace_periods", "grace periods"},
	{"expedited_gps", "expedited grace periods"},
	{"fqs_scans", "FQS scans"},
	{"rcu_barriers", "rcu_barrier calls"},
	{"sleeps", "wait-loop sleeps"},
	{"cleanup_batches", "cleanup runs"},
	{"ticks", "ticks"},
	{"lazy_callbacks", "lazy callbacks"},
}

func reason(base, r *bench.Record, w Workload) string {
	n := float64(max(1, w.N()))
	unit := "per device"
	if w.Namespaces > 0 {
		unit = "per namespace"
	}
	var parts []string
	bp, rp := phaseTotal(base), phaseTotal(r)
	names := map[string]bool{}
	for k := range bp {
		names[k] = true
	}
	for k := range rp {
		names[k] = true
	}
	best, bestD := "", 0.0
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range names {
			if !yield(k) {
				return
			}
		}
	}) {
		if d := rp[k] - bp[k]; math.Abs(d) > math.Abs(bestD) {
			best, bestD = k, d
		}
	}
	saved := float64(timeOf(base) - timeOf(r))
	if best != "" && math.Abs(bestD) >= 0.2*math.Abs(saved) && math.Abs(bestD) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s → %s %s", describePhase(best),
			bench.FormatDuration(bp[best]/n), bench.FormatDuration(rp[best]/n), unit))
	} else if w.Namespaces > 0 {
		parts = append(parts, fmt.Sprintf("the cleanup ends %s → %s %s", bench.FormatDuration(float64(timeOf(base))/n),
			bench.FormatDuration(float64(timeOf(r))/n), unit))
	}
	for _, c := range reasonCounters {
		a, b := base.Counters[c.key], r.Counters[c.key]
		if math.Round(a) != math.Round(b) && (a > 0 || b > 0) {
			parts = append(parts, fmt.Sprintf("%s %s → %s", c.words, countText(a), countText(b)))
		}
		if len(parts) >= 3 {
			break
		}
	}
	if len(parts) == 0 {
		return "the runs differ only in CPU time spread over many phases"
	}
	return strings.Join(parts, "; ")
}

func describePhase(p string) string {
	switch p {
	case phase.Barrier:
		return "waiting in rcu_barrier()"
	case phase.SyncNet:
		return "normal grace periods in synchronize_net()"
	case phase.SyncNetExp:
		return "expedited grace periods in synchronize_net()"
	case phase.WaitLoop:
		return "the wait loop (netdev_wait_allrefs)"
	case phase.NetnsCleanup:
		return "waiting for cleanup_net"
	case phase.Unregister:
		return "unregister CPU work"
	case phase.RTNL:
		return "waiting for RTNL"
	}
	return p
}

func countText(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// baselineOf describes the workload as it is.
func baselineOf(r *bench.Record, w Workload) Baseline {
	b := Baseline{NS: timeOf(r), Result: resultOf(r)}
	b.PerItemNS = float64(b.NS) / float64(max(1, w.N()))
	total := 0.0
	for _, p := range r.Phases {
		total += p.CPUNS + p.WaitNS
	}
	for _, p := range r.Phases {
		t := p.CPUNS + p.WaitNS
		if total <= 0 || t/total < 0.05 {
			continue
		}
		b.Phases = append(b.Phases, fmt.Sprintf("%.0f%% %s", 100*t/total, describePhase(p.Name)))
	}
	b.Why = strings.Join(b.Phases, ", ")
	if b.Why == "" {
		b.Why = "no phase stands out"
	}
	return b
}
