// Package explain reads the kernel log lines users paste about a device
// that will not go away ("unregister_netdevice: waiting for X to become
// free. Usage count = N", the ref_tracker stacks that follow it on kernels
// with CONFIG_NET_DEV_REFCNT_TRACKER, iproute2's "Device or resource busy"
// for a namespace file) and says what they mean on the kernel line that
// printed them: what the count counts, who can hold the device there (the
// holders and releases of package netdev's line, the emulated kernel's own
// model), whether the log shows a leak, a slow release or a namespace kept
// alive by a mount, and the next command to run.
package explain

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Log is what was found in the lines.
type Log struct {
	Lines    int       // lines read
	Waits    []Wait    // the wait loop's warnings, in order
	Trackers []Tracker // ref_tracker reports, in order
	Busy     []Busy    // namespace files that could not be removed
	// Release is the kernel release the log names ("Linux version X",
	// an oops's "Not tainted X"), "" for none.
	Release string
	// TrackerFormat is the ref_tracker report format seen: "leaked" (the
	// "leaked reference." lines), "name" (NAME%d@ADDR: the device's name
	// template), "class" (netdev@ADDR), "" for none.
	TrackerFormat string
}

// Wait is one "unregister_netdevice: waiting for DEV to become free.
// Usage count = N".
type Wait struct {
	Line   int // 1-based
	Device string
	Count  int
	// T is the line's time in seconds (dmesg's [seconds], dmesg -T's or
	// syslog's wall clock); HasT says whether the line had one.
	T    float64
	HasT bool
}

// Tracker is one ref_tracker report of users of one reference directory.
type Tracker struct {
	Line int
	// Dir is what the report names before the @: netdev (6.18), the
	// device's name template (eth%d, 6.6 to 6.12), "net notrefcnt" (a
	// namespace's tracker), "" for the "leaked reference." format.
	Dir string
	// Users of Total tracked references were taken from this stack (1 of
	// 0 for the "leaked reference." format, which has no totals).
	Users, Total int
	Stack        []Frame
	// Wait is the index in Log.Waits of the warning it follows (-1: none).
	Wait int
}

// Frame is one stack line: its function and, when decoded, its location.
type Frame struct {
	Func string `json:"func"`
	Loc  string `json:"loc,omitempty"`
}

// Busy is a namespace file whose removal failed with EBUSY.
type Busy struct {
	Line int
	Path string
	Text string
}

var (
	reWait     = regexp.MustCompile(`unregister_netdevice: waiting for (\S+) to become free\. Usage count = (-?\d+)`)
	reTracker  = regexp.MustCompile(`^ref_tracker: (.+?)@([0-9a-fA-Fx]+) has (\d+)/(\d+) users at\s*$`)
	reSkipped  = regexp.MustCompile(`^ref_tracker: (.+?)@([0-9a-fA-Fx]+) skipped reports about (\d+)/(\d+) users`)
	reLeaked   = regexp.MustCompile(`^leaked reference\.\s*$`)
	reBusyNs   = regexp.MustCompile(`Cannot remove namespace file "([^"]+)": Device or resource busy`)
	reBusyAny  = regexp.MustCompile(`(/\S*netns/[^\s:'"]+)\S*:? .*(Device or resource busy|target is busy)`)
	reVersion  = regexp.MustCompile(`Linux version (\S+)`)
	reTainted  = regexp.MustCompile(`(?:Not tainted|Tainted: [A-Z ]+?) (\d+\.\d+\S*) #`)
	reDmesgT   = regexp.MustCompile(`^\[\s*(\d+\.\d+)\] ?`)
	reDmesgH   = regexp.MustCompile(`^\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\] ?`)
	reSyslog   = regexp.MustCompile(`^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ kernel: ?`)
	reISO      = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?) \S+ kernel: ?`)
	reKernelPf = regexp.MustCompile(`^kernel: ?`)
)

// Parse reads log text: dmesg (with or without -T), syslog, journalctl -k
// -o short-iso, a console or a mail quoting them ("> "); every line that is
// none of the kinds above is skipped.
func Parse(text string) *Log {
	lg := &Log{}
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	lg.Lines = len(lines)
	if lg.Lines > 0 && lines[lg.Lines-1] == "" {
		lg.Lines--
	}
	cur := -1 // the tracker whose stack is being read
	for i, raw := range lines {
		l, t, hasT := strip(raw)
		if cur >= 0 {
			if f, ok := frame(l); ok {
				lg.Trackers[cur].Stack = append(lg.Trackers[cur].Stack, f)
				continue
			}
			cur = -1
		}
		l = strings.TrimLeft(l, " \t")
		switch {
		case reWait.MatchString(l):
			m := reWait.FindStringSubmatch(l)
			n, _ := strconv.Atoi(m[2])
			lg.Waits = append(lg.Waits, Wait{Line: i + 1, Device: m[1], Count: n, T: t, HasT: hasT})
		case reTracker.MatchString(l):
			m := reTracker.FindStringSubmatch(l)
			u, _ := strconv.Atoi(m[3])
			tot, _ := strconv.Atoi(m[4])
			lg.Trackers = append(lg.Trackers, Tracker{Line: i + 1, Dir: m[1], Users: u, Total: tot, Wait: len(lg.Waits) - 1})
			cur = len(lg.Trackers) - 1
			if lg.TrackerFormat == "" {
				lg.TrackerFormat = "class"
				if strings.Contains(m[1], "%") {
					lg.TrackerFormat = "name"
				}
			}
		case reLeaked.MatchString(l):
			lg.Trackers = append(lg.Trackers, Tracker{Line: i + 1, Users: 1, Wait: len(lg.Waits) - 1})
			cur = len(lg.Trackers) - 1
			if lg.TrackerFormat == "" {
				lg.TrackerFormat = "leaked"
			}
		case reSkipped.MatchString(l):
		case reBusyNs.MatchString(l):
			lg.Busy = append(lg.Busy, Busy{Line: i + 1, Path: reBusyNs.FindStringSubmatch(l)[1], Text: strings.TrimSpace(l)})
		case reBusyAny.MatchString(l):
			lg.Busy = append(lg.Busy, Busy{Line: i + 1, Path: reBusyAny.FindStringSubmatch(l)[1], Text: strings.TrimSpace(l)})
		case lg.Release == "" && reVersion.MatchString(l):
			lg.Release = reVersion.FindStringSubmatch(l)[1]
		case lg.Release == "" && reTainted.MatchString(l):
			lg.Release = reTainted.FindStringSubmatch(l)[1]
		}
	}
	return lg
}

// strip removes what wraps a kernel line: a mail's quote marks, syslog's or
// journalctl's prefix, dmesg's time stamp. It returns the line and its time
// (seconds) if it had one.
func strip(l string) (string, float64, bool) {
	l = strings.TrimRight(l, " \t")
	for {
		t := strings.TrimLeft(l, " \t")
		if !strings.HasPrefix(t, ">") {
			break
		}
		l = strings.TrimPrefix(strings.TrimPrefix(t, ">"), " ")
	}
	var ts float64
	has := false
	trimmed := strings.TrimLeft(l, " \t")
	switch {
	case reSyslog.MatchString(trimmed):
		m := reSyslog.FindStringSubmatch(trimmed)
		if tm, err := time.Parse("Jan _2 15:04:05", m[1]); err == nil {
			ts, has = float64(tm.Unix()), true
		}
		l = trimmed[len(m[0]):]
	case reISO.MatchString(trimmed):
		m := reISO.FindStringSubmatch(trimmed)
		for _, f := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999-0700", "2006-01-02T15:04:05"} {
			if tm, err := time.Parse(f, m[1]); err == nil {
				ts, has = float64(tm.UnixNano())/1e9, true
				break
			}
		}
		l = trimmed[len(m[0]):]
	case reKernelPf.MatchString(trimmed):
		l = trimmed[len(reKernelPf.FindString(trimmed)):]
	}
	switch {
	case reDmesgT.MatchString(l):
		m := reDmesgT.FindStringSubmatch(l)
		if v, err := strconv.ParseFloat(m[1], 64); err == nil {
			ts, has = v, true
		}
		l = l[len(m[0]):]
	case reDmesgH.MatchString(l):
		m := reDmesgH.FindStringSubmatch(l)
		if tm, err := time.Parse("Mon Jan _2 15:04:05 2006", m[1]); err == nil {
			ts, has = float64(tm.Unix()), true
		}
		l = l[len(m[0]):]
	}
	return l, ts, has
}

// frame reads one indented stack line of a ref_tracker report:
// "     xfrm_dev_state_add+0xe5/0x4d0", " netdev_hold include/linux/netdevice.h:4068 [inline]",
// "     sk_alloc (./include/net/net_namespace.h:339 net/core/sock.c:2227)".
func frame(l string) (Frame, bool) {
	if l == "" || (l[0] != ' ' && l[0] != '\t') {
		return Frame{}, false
	}
	f := strings.Fields(l)
	if len(f) == 0 {
		return Frame{}, false
	}
	name := f[0]
	if i := strings.IndexByte(name, '+'); i > 0 {
		name = name[:i]
	}
	if !validSymbol(name) {
		return Frame{}, false
	}
	loc := strings.TrimSpace(strings.Join(f[1:], " "))
	loc = strings.TrimSuffix(strings.TrimPrefix(loc, "("), ")")
	return Frame{Func: name, Loc: loc}, true
}

func validSymbol(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
