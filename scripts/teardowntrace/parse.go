package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/safefile"
)

// Event is one trace record, from either `perf script` or a tracefs trace
// file, reduced to what both formats carry.
type Event struct {
	Line  int    // 1-based line number in the input
	Comm  string // task running when the event was recorded
	TID   int
	CPU   int
	TS    int64  // timestamp in nanoseconds (trace clock)
	Name  string // event name without subsystem: sched_switch, sys_enter_sendmsg, tracing_mark_write, ...
	Args  string // the event's printed arguments
	Flags string // tracefs irq-info column (d.h1. ...); empty for perf
	args  map[string]string
}

// Arg returns the value of key=value in the event's arguments ("" if absent).
// Brackets around a token ("[timeout=1]", "[action=RCU]") are ignored.
func (e *Event) Arg(key string) string {
	if e.args == nil {
		e.args = parseArgs(e.Args)
	}
	return e.args[key]
}

// ArgInt is Arg parsed as an integer (decimal or 0x hex); ok is false when the
// key is absent or not a number.
func (e *Event) ArgInt(key string) (int64, bool) {
	v := e.Arg(key)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		u, uerr := strconv.ParseUint(v, 0, 64)
		if uerr != nil {
			return 0, false
		}
		n = int64(u)
	}
	return n, true
}

// HardIRQ and SoftIRQ report the context flag of a tracefs event; both are
// false for perf events, whose output has no such column.
func (e *Event) HardIRQ() bool {
	return len(e.Flags) >= 3 && (e.Flags[2] == 'h' || e.Flags[2] == 'H' || e.Flags[2] == 'z' || e.Flags[2] == 'Z')
}

// SoftIRQ reports the tracefs softirq context flag (see HardIRQ).
func (e *Event) SoftIRQ() bool {
	return len(e.Flags) >= 3 && (e.Flags[2] == 's' || e.Flags[2] == 'H')
}

func parseArgs(s string) map[string]string {
	m := map[string]string{}
	for _, tok := range strings.Fields(s) {
		tok = strings.Trim(tok, "[],")
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	// "fd: 3, msg: 0x..., flags: 0" (syscall events) are "key: value" pairs.
	for _, part := range strings.Split(s, ", ") {
		k, v, ok := strings.Cut(part, ": ")
		if ok && !strings.ContainsAny(k, " =") {
			if _, dup := m[k]; !dup {
				m[k] = strings.TrimSpace(v)
			}
		}
	}
	return m
}

// Trace is a parsed input: events sorted by time, and what the parser noticed.
type Trace struct {
	Events  []Event
	Format  string // "perf", "tracefs", or "perf+tracefs" for a mixed file
	Skipped int    // lines that were neither events nor comments
	Lost    []string
	NCPU    int // CPUs the recorder saw, from the header ("#P:2", "# nrcpus online : 2"); 0 if absent
}

var (
	ftraceNCPU = regexp.MustCompile(`#P:(\d+)`)
	perfNCPU   = regexp.MustCompile(`^#\s*nrcpus online\s*:\s*(\d+)`)
)

var (
	// perf script:  "  ip 31314 [000]  4535.990250:  syscalls:sys_enter_sendmsg: fd: 0x00000003, ..."
	perfLine = regexp.MustCompile(`^\s*(\S.*?)\s+(-?\d+)(?:/-?\d+)?\s+\[(\d+)\]\s+(\d+\.\d+):\s+(?:\d+\s+)?([A-Za-z0-9_]+):([A-Za-z0-9_]+):\s?(.*)$`)
	// tracefs:  "  ip-32401   [000] .....  4906.996338: sys_sendmsg(fd: 3, ...)"
	ftraceLine = regexp.MustCompile(`^\s*(.*)-(\d+)\s+(?:\(\s*[-\d]+\)\s+)?\[(\d+)\]\s+(?:(\S{4,6})\s+)?(\d+\.\d+):\s+(.*)$`)
	// tracefs syscall events: "sys_sendmsg(fd: 3, ...)" and "sys_sendmsg -> 0x20"
	ftraceSysEnter = regexp.MustCompile(`^(sys_[a-z0-9_]+)\((.*)\)$`)
	ftraceSysExit  = regexp.MustCompile(`^(sys_[a-z0-9_]+) -> (\S+)$`)
)

// ReadTrace parses the trace in file name ("-": standard input), a
// regular file opened without blocking.
func ReadTrace(name string) (*Trace, error) {
	if name == "-" {
		return Parse(os.Stdin)
	}
	f, err := safefile.Open(name, safefile.FollowLinks)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads perf script or tracefs trace text (the format is recognised
// line by line) and returns the events sorted by timestamp.
func Parse(r io.Reader) (*Trace, error) {
	t := &Trace{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	formats := map[string]bool{}
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" {
			continue
		}
		if strings.HasPrefix(trim, "#") {
			for _, re := range []*regexp.Regexp{ftraceNCPU, perfNCPU} {
				if m := re.FindStringSubmatch(trim); m != nil {
					t.NCPU, _ = strconv.Atoi(m[1])
				}
			}
			continue
		}
		if strings.Contains(line, "LOST") && strings.Contains(line, "EVENTS") || strings.Contains(line, "PERF_RECORD_LOST") {
			t.Lost = append(t.Lost, trim)
			continue
		}
		if ev, ok := parsePerf(line); ok {
			ev.Line = n
			t.Events = append(t.Events, ev)
			formats["perf"] = true
			continue
		}
		if ev, ok := parseFtrace(line); ok {
			ev.Line = n
			t.Events = append(t.Events, ev)
			formats["tracefs"] = true
			continue
		}
		t.Skipped++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading trace: line %d: %w", n+1, err)
	}
	switch {
	case formats["perf"] && formats["tracefs"]:
		t.Format = "perf+tracefs"
	case formats["perf"]:
		t.Format = "perf"
	case formats["tracefs"]:
		t.Format = "tracefs"
	}
	sort.SliceStable(t.Events, func(i, j int) bool { return t.Events[i].TS < t.Events[j].TS })
	return t, nil
}

func parsePerf(line string) (Event, bool) {
	m := perfLine.FindStringSubmatch(line)
	if m == nil {
		return Event{}, false
	}
	ts, ok := parseTS(m[4])
	if !ok {
		return Event{}, false
	}
	tid, _ := strconv.Atoi(m[2])
	cpu, _ := strconv.Atoi(m[3])
	return Event{Comm: m[1], TID: tid, CPU: cpu, TS: ts, Name: m[6], Args: m[7]}, true
}

func parseFtrace(line string) (Event, bool) {
	m := ftraceLine.FindStringSubmatch(line)
	if m == nil {
		return Event{}, false
	}
	ts, ok := parseTS(m[5])
	if !ok {
		return Event{}, false
	}
	tid, _ := strconv.Atoi(m[2])
	cpu, _ := strconv.Atoi(m[3])
	ev := Event{Comm: strings.TrimSpace(m[1]), TID: tid, CPU: cpu, TS: ts, Flags: m[4]}
	body := m[6]
	if s := ftraceSysEnter.FindStringSubmatch(body); s != nil {
		ev.Name = "sys_enter_" + strings.TrimPrefix(s[1], "sys_")
		ev.Args = s[2]
		return ev, true
	}
	if s := ftraceSysExit.FindStringSubmatch(body); s != nil {
		ev.Name = "sys_exit_" + strings.TrimPrefix(s[1], "sys_")
		ev.Args = s[2]
		return ev, true
	}
	name, args, ok := strings.Cut(body, ":")
	if !ok || name == "" || strings.ContainsAny(name, " ()") {
		return Event{}, false
	}
	ev.Name = name
	ev.Args = strings.TrimPrefix(args, " ")
	if ev.Comm == "<idle>" {
		ev.Comm = "swapper"
	}
	return ev, true
}

// parseTS turns "4535.990250" (any number of decimals up to 9) into ns.
func parseTS(s string) (int64, bool) {
	sec, frac, _ := strings.Cut(s, ".")
	secs, err := strconv.ParseInt(sec, 10, 64)
	if err != nil || len(frac) > 9 {
		return 0, false
	}
	frac += strings.Repeat("0", 9-len(frac))
	ns, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	return secs*1_000_000_000 + ns, true
}
