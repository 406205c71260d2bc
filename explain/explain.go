package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndst-project/ndst/netdev"
)

// Options say which kernel line printed the log, when the caller knows.
type Options struct {
	// Profile is the line (--profile), "" to take it from the log, else
	// from Running.
	Profile string
	// Running is the running kernel's release (uname -r), the last resort
	// for the line; "" for none.
	Running string
	// Mounts, when non-nil, lists the nsfs mounts of the machine (see
	// ScanNsfsMounts), checked against the namespace files that were busy.
	Mounts []NsfsMount
}

// Report is the explanation of one log.
type Report struct {
	Op       string `json:"op"`
	Lines    int    `json:"lines"`
	Line     string `json:"kernel_line,omitempty"`
	LineFrom string `json:"kernel_line_from"`
	// Release is the kernel release the line was chosen from ("" when
	// --profile or the log's format chose it).
	Release string `json:"release,omitempty"`
	// Devices are the devices the wait loop warned about, in the order of
	// their first warning.
	Devices []Device `json:"devices"`
	// Namespaces are the namespace files that could not be removed.
	Namespaces []BusyNamespace `json:"busy_namespaces,omitempty"`
	// NetnsRefs are ref_tracker reports of namespace references (the
	// netns tracker), which are about a namespace, not a device.
	NetnsRefs []TrackerReport `json:"netns_references,omitempty"`
	Result    string          `json:"result"` // "explained" or "nothing" (no line ndst explains)
}

// Device is what the log says about one device.
type Device struct {
	Name     string   `json:"device"`
	Warnings int      `json:"warnings"`
	Counts   []int    `json:"counts"`
	SpanS    *float64 `json:"span_s,omitempty"` // from its first warning to its last
	Count    int      `json:"count"`            // the last
	Ready    int      `json:"ready_at"`         // the count at which the wait ends on the line
	Holders  int      `json:"holders"`          // Count - Ready: references held by others
	Meaning  string   `json:"meaning"`
	// Tracked are the holders ref_tracker named, from its stacks.
	Tracked []TrackerReport `json:"tracked,omitempty"`
	// Possible are the holders a device can have on the line.
	Possible []PossibleHolder `json:"possible_holders"`
	Verdict  string           `json:"verdict"` // leak, slow-release, unbalanced, undecided
	Why      string           `json:"why"`
	Next     []string         `json:"next"`
}

// TrackerReport is one ref_tracker report, with the holder its stack names.
type TrackerReport struct {
	Line   int     `json:"line"`
	Dir    string  `json:"dir,omitempty"`
	Users  int     `json:"users"`
	Total  int     `json:"total,omitempty"`
	Holder string  `json:"holder,omitempty"` // a holder of package netdev, "" for another
	Owner  string  `json:"owner,omitempty"`  // the frame that took the reference
	Loc    string  `json:"loc,omitempty"`
	Stack  []Frame `json:"stack"`
	// Reports is how many times the log printed it (once per warning).
	Reports int `json:"reports,omitempty"`
}

// PossibleHolder is one holder a device can have on the line, and how it
// lets go.
type PossibleHolder struct {
	Name    string `json:"name"`
	Release string `json:"release"` // "at once", "call_rcu", or what it waits for
	Source  string `json:"source,omitempty"`
}

// BusyNamespace is a namespace file whose removal failed with EBUSY.
type BusyNamespace struct {
	Path    string      `json:"path"`
	Line    int         `json:"line"`
	Why     string      `json:"why"`
	Mounts  []NsfsMount `json:"mounts,omitempty"` // where it is still mounted (with Options.Mounts)
	Checked bool        `json:"mounts_checked"`
	Next    []string    `json:"next"`
}

// NsfsMount is one mount of a namespace file, in some mount namespace.
type NsfsMount struct {
	Ns         string `json:"ns"`          // "net:[4026532177]": the namespace mounted
	MountPoint string `json:"mount_point"` // as the mount namespace sees it
	MountNs    string `json:"mount_ns"`    // "mnt:[4026531841]"
	PID        int    `json:"pid"`         // one process in that mount namespace
	Comm       string `json:"comm,omitempty"`
	Own        bool   `json:"own"` // in ndst's own mount namespace
}

// Explain explains a parsed log.
func Explain(lg *Log, o Options) *Report {
	r := &Report{Op: "explain", Lines: lg.Lines, Result: "nothing"}
	r.Line, r.LineFrom, r.Release = lineOf(lg, o)
	p, known := netdev.Profiles[r.Line]
	byName := map[string]int{}
	for wi, w := range lg.Waits {
		i, ok := byName[w.Device]
		if !ok {
			i = len(r.Devices)
			byName[w.Device] = i
			r.Devices = append(r.Devices, Device{Name: w.Device})
		}
		d := &r.Devices[i]
		d.Warnings++
		d.Counts = append(d.Counts, w.Count)
		d.Count = w.Count
		first := lg.Waits[firstWait(lg, w.Device)]
		if w.HasT && first.HasT && wi != firstWait(lg, w.Device) {
			s := w.T - first.T
			d.SpanS = &s
		}
	}
	for _, t := range lg.Trackers {
		tr := trackerReport(t)
		if strings.HasPrefix(t.Dir, "net ") || t.Dir == "net" {
			r.NetnsRefs = append(r.NetnsRefs, tr)
			continue
		}
		if t.Wait >= 0 {
			d := &r.Devices[byName[lg.Waits[t.Wait].Device]]
			d.addTracked(tr)
		}
	}
	for i := range r.Devices {
		explainDevice(&r.Devices[i], p, known, r.Line, r.Release)
	}
	for _, b := range lg.Busy {
		r.Namespaces = append(r.Namespaces, busyNamespace(b, o.Mounts))
	}
	if len(r.Devices)+len(r.Namespaces)+len(r.NetnsRefs) > 0 {
		r.Result = "explained"
	}
	return r
}

// addTracked adds a report, or updates the one of the same stack that an
// earlier warning printed (the kernel repeats them with every warning).
func (d *Device) addTracked(tr TrackerReport) {
	for i, x := range d.Tracked {
		if x.Dir == tr.Dir && x.Owner == tr.Owner && x.Loc == tr.Loc {
			tr.Reports = x.Reports + 1
			d.Tracked[i] = tr
			return
		}
	}
	tr.Reports = 1
	d.Tracked = append(d.Tracked, tr)
}

func firstWait(lg *Log, dev string) int {
	for i, w := range lg.Waits {
		if w.Device == dev {
			return i
		}
	}
	return -1
}

// lineOf picks the kernel line: --profile, the release the log names, its
// ref_tracker format, the running kernel. It says why, and the release it
// read ("" for none).
func lineOf(lg *Log, o Options) (string, string, string) {
	if o.Profile != "" {
		return o.Profile, "--profile", ""
	}
	if lg.Release != "" {
		if l, why, err := netdev.ProfileForRelease(lg.Release); err == nil {
			return l, "the log names the release: " + why, lg.Release
		}
	}
	switch lg.TrackerFormat {
	case "leaked":
		return "6.1", `the log's ref_tracker reports are "leaked reference." lines, the format of 5.17 to 6.1 (read in 6.1 lib/ref_tracker.c; 6.6 prints NAME@ADDR has U/T users)`, ""
	case "name":
		return "6.12", "the log's ref_tracker reports name the device's name template (NAME%d@ADDR), the format read in 6.6 and 6.12", ""
	case "class":
		return "6.18", "the log's ref_tracker reports name the class netdev@ADDR, the format read in 6.18", ""
	}
	if o.Running != "" {
		if l, why, err := netdev.ProfileForRelease(o.Running); err == nil {
			return l, "the running kernel (" + why + "); give --profile LINE for a log from another kernel", o.Running
		}
	}
	return "", "unknown: the log names no release and this is not a Linux host; give --profile LINE", ""
}

func trackerReport(t Tracker) TrackerReport {
	tr := TrackerReport{Line: t.Line, Dir: t.Dir, Users: t.Users, Total: t.Total, Stack: t.Stack}
	tr.Holder, tr.Owner = holderOf(t.Stack)
	for _, f := range t.Stack {
		if f.Func == tr.Owner {
			tr.Loc = f.Loc
			break
		}
	}
	return tr
}

// readyChange is the change of the lines that made a device ready at 1.
func readyChange() netdev.Change {
	for _, name := range netdev.ProfileNames {
		for _, c := range netdev.Profiles[name].Changes {
			if strings.Contains(c.Effect, "ready at refcount 1") {
				return c
			}
		}
	}
	return netdev.Change{}
}

func explainDevice(d *Device, p netdev.Profile, known bool, line, release string) {
	d.Ready = p.ReadyRefcount
	d.Holders = d.Count - d.Ready
	d.Meaning = meaning(d, p, known, line, release)
	if known {
		d.Possible = possible(p)
	}
	d.Verdict, d.Why = verdict(d, p, known)
	d.Next = next(d, line)
}

func meaning(d *Device, p netdev.Profile, known bool, line, release string) string {
	var b strings.Builder
	c := readyChange()
	switch {
	case !known:
		fmt.Fprintf(&b, "Before %s the count is the references others hold (the wait ends at 0); from %s (%s) a device also holds one on itself until free_netdev (the wait ends at 1: one holder shows as 2). Give --profile LINE to say which.", c.Release, c.Release, c.Commit)
		return b.String()
	case p.ReadyRefcount == 0:
		fmt.Fprintf(&b, "%d = %s: on line %s the wait ends at 0, and the count is the references others still hold.", d.Count, holdersText(d.Count), line)
	default:
		fmt.Fprintf(&b, "%d = %s + the device's own reference: since %s (%s, %q) a device holds a reference on itself from allocation until free_netdev, so the wait ends at 1 and one holder shows as 2.",
			d.Count, holdersText(d.Count-1), c.Commit, c.Release, c.Title)
	}
	switch perCPU(line, release) {
	case "yes":
		fmt.Fprintf(&b, " The count is netdev_refcnt_read(): the sum of every possible CPU's counter (the per-CPU refcount of 29b4433d991c, 2.6.37; optional as CONFIG_PCPU_DEV_REFCNT since 5.13), read without a lock: a hold on one CPU and its put on another cancel out, and a sum below %d means more puts than holds.", p.ReadyRefcount)
	case "no":
		b.WriteString(" The count is the device's one atomic counter (as read in 2.6.32; per-CPU counters came with 29b4433d991c, 2.6.37).")
	default:
		b.WriteString(" From 2.6.37 (29b4433d991c) the count is the sum of per-CPU counters, read without a lock, in which a hold on one CPU and its put on another cancel out; before, one atomic counter.")
	}
	return b.String()
}

// perCPU says whether the count is a sum of per-CPU counters: "yes" from
// 2.6.37 (29b4433d991c "net: percpu net_device refcount"; read in 5.10, 6.1
// and 6.18 net/core/dev.c netdev_refcnt_read), "no" before (2.6.32 reads one
// atomic_t), "" when neither the release nor the line says.
func perCPU(line, release string) string {
	if v, ok := version(release); ok {
		if less(v, []int{2, 6, 37}) {
			return "no"
		}
		return "yes"
	}
	switch {
	case line == "":
		return ""
	case line == "2.6.36": // the line of every release from 2.6.36 to 5.9
		return ""
	case strings.HasPrefix(line, "2.6."):
		return "no"
	}
	return "yes"
}

// version reads the leading numbers of a release ("3.13.0-68-generic").
func version(s string) ([]int, bool) {
	var v []int
	for _, part := range strings.SplitN(s, ".", 4) {
		n, digits := 0, 0
		for digits < len(part) && part[digits] >= '0' && part[digits] <= '9' {
			n = n*10 + int(part[digits]-'0')
			digits++
		}
		if digits == 0 {
			break
		}
		v = append(v, n)
		if digits < len(part) {
			break
		}
	}
	return v, len(v) >= 2
}

func less(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

func holdersText(n int) string {
	switch {
	case n < 0:
		return fmt.Sprintf("%d holders (more references dropped than taken)", n)
	case n == 0:
		return "no holder"
	case n == 1:
		return "1 holder"
	}
	return fmt.Sprintf("%d holders", n)
}

// possible lists the holders of a down device on the line (its
// subsystems, from package netdev) and those that hold only when something
// else does (a route, a socket: netdev.HoldableNames beyond them).
func possible(p netdev.Profile) []PossibleHolder {
	var out []PossibleHolder
	seen := map[string]bool{}
	for _, s := range p.Subsystems {
		name := s.Holder.String()
		seen[name] = true
		rel := "lets go at NETDEV_UNREGISTER"
		if s.Release == netdev.ReleaseRCU {
			rel = "lets go through call_rcu, a grace period after NETDEV_UNREGISTER"
		}
		out = append(out, PossibleHolder{Name: name, Release: rel, Source: s.Source})
	}
	extra := map[string]string{
		"dst":    "a cached route: a grace period after its last user",
		"route":  "a route through it: until deleted",
		"socket": "a socket bound to it: until closed",
		"xfrm":   "an xfrm state on it: until deleted",
	}
	for _, n := range netdev.HoldableNames {
		if !seen[n] {
			out = append(out, PossibleHolder{Name: n, Release: extra[n]})
		}
	}
	return out
}

// leakAfter is how long an unchanged count must last for a leak: a holder
// that lets go through RCU is late by a grace period, milliseconds even
// when a CPU is slow to report, and the warning comes every 10 s.
const leakAfter = 30.0

func verdict(d *Device, p netdev.Profile, known bool) (string, string) {
	minC, maxC := slices.Min(d.Counts), slices.Max(d.Counts)
	span := ""
	if d.SpanS != nil {
		span = fmt.Sprintf(" over %.0f s", *d.SpanS)
	}
	switch {
	case known && minC < p.ReadyRefcount:
		return "unbalanced", fmt.Sprintf("a count of %d is below %d, where the wait ends: a dev_put without its dev_hold (a kernel bug); no amount of waiting frees the device", minC, p.ReadyRefcount)
	case decreasing(d.Counts):
		return "slow-release", fmt.Sprintf("the count fell from %d to %d%s: references are being dropped, late (typically RCU callbacks: a release through call_rcu, a cached dst freed after a grace period), not leaked", d.Counts[0], d.Count, span)
	case minC == maxC && (d.Warnings >= 3 || d.SpanS != nil && *d.SpanS >= leakAfter):
		return "leak", fmt.Sprintf("the count stayed at %d for %d warnings%s (after a first wait of %s before the first warning): a release through RCU is late by a grace period (milliseconds), not by this much; something holds the device and does not let go at NETDEV_UNREGISTER", d.Count, d.Warnings, span, period(p))
	case maxC > d.Counts[0]:
		return "leak", fmt.Sprintf("the count rose to %d while the device waited: references are still being taken on an unregistered device", maxC)
	}
	return "undecided", fmt.Sprintf("%s: a slow release and a leak look alike at first (a warning comes every %s of waiting); a count that falls is a slow release, one that stays for a minute is a leak", plural(d.Warnings, "warning"), period(p))
}

// period is how often the wait loop warns on the line: every 10 s
// (5.10 net/core/dev.c l.10515, as read), from the sysctl
// net.core.netdev_unregister_timeout_secs, 10 by default, later (6.1 l.10537).
func period(p netdev.Profile) string {
	if p.Name != "" && !strings.HasPrefix(p.Name, "2.6.") && p.Name != "5.10" {
		return "net.core.netdev_unregister_timeout_secs (10 s by default)"
	}
	return "10 s"
}

func decreasing(c []int) bool {
	if len(c) < 2 || c[len(c)-1] >= c[0] {
		return false
	}
	for i := 1; i < len(c); i++ {
		if c[i] > c[i-1] {
			return false
		}
	}
	return true
}

// holderNext is what to run for each holder a stack names.
var holderNext = map[string]string{
	"in_device": "ip -4 addr show dev %[1]s   # an address still on it keeps its in_device",
	"arp_parms": "ip -4 neigh show dev %[1]s",
	"inet6_dev": "ip -6 addr show dev %[1]s; ip -6 route show table all dev %[1]s   # an address or route still on it keeps its inet6_dev",
	"nd_parms":  "ip -6 neigh show dev %[1]s",
	"dst":       "ss -tanpie   # a socket caching a route through %[1]s holds its dst",
	"route":     "ip route show table all dev %[1]s; ip -6 route show table all dev %[1]s",
	"socket":    "ss -a -n -p -e | grep -w %[1]s; ss -0 -a -p   # a socket bound to it (SO_BINDTODEVICE, a packet socket)",
	"xfrm":      "ip xfrm state; ip xfrm policy   # an xfrm state offloaded to %[1]s holds it until deleted (ip xfrm state flush)",
}

func next(d *Device, line string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, t := range d.Tracked {
		switch {
		case t.Holder != "" && holderNext[t.Holder] != "":
			add(fmt.Sprintf(holderNext[t.Holder], d.Name))
		case t.Holder != "":
			add(fmt.Sprintf("ip -d link show %s   # held by %s (%s)", d.Name, t.Holder, t.Owner))
		case t.Owner != "":
			loc := ""
			if t.Loc != "" {
				loc = " (" + t.Loc + ")"
			}
			add(fmt.Sprintf("# %s took the reference%s and did not let go at NETDEV_UNREGISTER: look for a fix of it in the kernel's history (git log -S%s -- net/ drivers/net/)", t.Owner, loc, t.Owner))
		}
	}
	switch d.Verdict {
	case "unbalanced":
		add(fmt.Sprintf("uname -r   # then look for a fix of an unbalanced dev_put on %s's driver or protocol in that kernel's stable updates; a reboot is the only way to free %s", d.Name, d.Name))
	case "slow-release":
		add("grep . /sys/kernel/rcu_expedited /sys/kernel/rcu_normal; dmesg | grep -i 'rcu.*stall'   # what delays the RCU callbacks")
	case "undecided":
		add("dmesg -w | ndst explain -   # for the next minute: does the count fall?")
	}
	if d.Verdict == "leak" && len(d.Tracked) == 0 {
		for _, h := range []string{"socket", "route", "xfrm"} {
			add(fmt.Sprintf(holderNext[h], d.Name))
		}
		add("# a kernel with CONFIG_NET_DEV_REFCNT_TRACKER=y (5.17 on) prints each holder's stack after this warning")
	}
	if d.Name == "lo" {
		add("# lo goes last in its namespace's cleanup: what holds it lives in that namespace (a socket, a cached route)")
	}
	return out
}

func busyNamespace(b Busy, mounts []NsfsMount) BusyNamespace {
	bn := BusyNamespace{Path: b.Path, Line: b.Line, Checked: mounts != nil,
		Why: "the namespace file is still a mount point (a bind mount of the namespace): another mount of it, in this mount namespace or a copy in another (a container, a service with private mounts, an unshare -m shell), keeps it mounted; every mount of it keeps the namespace alive, so its devices are never unregistered and no 'waiting for' warning appears"}
	name := b.Path[strings.LastIndexByte(b.Path, '/')+1:]
	for _, m := range mounts {
		if m.MountPoint == b.Path || strings.HasSuffix(m.MountPoint, "/"+name) {
			bn.Mounts = append(bn.Mounts, m)
		}
	}
	pid, point := "PID", b.Path
	for _, m := range bn.Mounts {
		if !m.Own {
			pid, point = fmt.Sprint(m.PID), m.MountPoint
			break
		}
	}
	bn.Next = []string{
		fmt.Sprintf("grep -H ' %s ' /proc/[0-9]*/mountinfo   # which processes' mount namespaces still have it (the PID in the path)", b.Path),
		"grep -H nsfs /proc/[0-9]*/mountinfo   # every namespace mount, by process",
		fmt.Sprintf("nsenter -t %s -m umount %s   # in the mount namespace that holds it, then ip netns del %s", pid, point, name),
	}
	return bn
}

func plural(n int, w string) string {
	if n == 1 {
		return "1 " + w
	}
	return fmt.Sprintf("%d %ss", n, w)
}
