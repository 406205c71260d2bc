package modbackend

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Last is /proc/sys/net/ndst/last: the namespace's most recent add, del or
// del_batch.
type Last struct {
	Seq     uint64 // 0 before any operation, then 1, 2, ...
	Op      string // "add", "del", "del_batch", or "none"
	Count   int    // devices created or unregistered
	Skipped int    // devices in a del range the module did not create
	Kernel  time.Duration
	Errno   int // the write's error as a positive errno, 0 for none
}

// ParseLast parses "seq=S op=OP count=C skipped=K ns=NS err=E".
func ParseLast(text string) (Last, error) {
	var l Last
	line := strings.TrimSuffix(text, "\n")
	if line == "" || strings.Contains(line, "\n") {
		return l, fmt.Errorf("module's last: want one line, got %q", text)
	}
	seen := map[string]bool{}
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || seen[k] {
			return l, fmt.Errorf("module's last: bad word %q in %q", w, line)
		}
		seen[k] = true
		var err error
		switch k {
		case "seq":
			l.Seq, err = strconv.ParseUint(v, 10, 64)
		case "op":
			l.Op = v
			if v == "" {
				err = fmt.Errorf("empty op")
			}
		case "count":
			l.Count, err = atoi(v)
		case "skipped":
			l.Skipped, err = atoi(v)
		case "ns":
			var ns uint64
			ns, err = strconv.ParseUint(v, 10, 63)
			l.Kernel = time.Duration(ns)
		case "err":
			var e int64
			e, err = strconv.ParseInt(v, 10, 32)
			l.Errno = int(-e)
		default:
			// A newer module may say more; what is known is enough.
		}
		if err != nil {
			return l, fmt.Errorf("module's last: bad %s in %q", k, line)
		}
	}
	if !seen["seq"] || !seen["op"] {
		return l, fmt.Errorf("module's last: no seq or op in %q", line)
	}
	if l.Op != "none" && !(seen["count"] && seen["ns"]) {
		return l, fmt.Errorf("module's last: no count or ns in %q", line)
	}
	return l, nil
}

// ModDevice is one line of /proc/sys/net/ndst/devices.
type ModDevice struct {
	Ifindex  int
	Name     string
	Refcount int
}

// ParseDevices parses "IFINDEX NAME REFCOUNT" lines.
func ParseDevices(text string) ([]ModDevice, error) {
	var devs []ModDevice
	err := parseTriples(text, "devices", "IFINDEX NAME REFCOUNT", func(idx int, name string, n int) {
		devs = append(devs, ModDevice{Ifindex: idx, Name: name, Refcount: n})
	})
	if err != nil {
		return nil, err
	}
	return devs, nil
}

// parseTriples parses "IFINDEX NAME NUMBER" lines (IFINDEX >= 1, NUMBER >=
// 0) of the module's file what, calling add for each.
func parseTriples(text, what, form string, add func(ifindex int, name string, n int)) error {
	for i, line := range splitLines(text) {
		f := strings.Fields(line)
		if len(f) != 3 {
			return fmt.Errorf("module's %s, line %d: want %s, got %q", what, i+1, form, line)
		}
		idx, err1 := atoi(f[0])
		n, err2 := atoi(f[2])
		if err1 != nil || err2 != nil || idx < 1 {
			return fmt.Errorf("module's %s, line %d: bad numbers in %q", what, i+1, line)
		}
		add(idx, f[1], n)
	}
	return nil
}

// ParseSamples parses one duration in nanoseconds per line.
func ParseSamples(text string) ([]int64, error) {
	lines := splitLines(text)
	s := make([]int64, 0, len(lines))
	for i, line := range lines {
		v, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("module's samples, line %d: bad duration %q", i+1, line)
		}
		s = append(s, v)
	}
	return s, nil
}

// HoldInfo is one line of /proc/sys/net/ndst/hold.
type HoldInfo struct {
	Ifindex int
	Name    string
	Left    time.Duration
}

// ParseHolds parses "IFINDEX NAME MS_LEFT" lines.
func ParseHolds(text string) ([]HoldInfo, error) {
	var hs []HoldInfo
	err := parseTriples(text, "holds", "IFINDEX NAME MS_LEFT", func(idx int, name string, ms int) {
		hs = append(hs, HoldInfo{Ifindex: idx, Name: name, Left: time.Duration(ms) * time.Millisecond})
	})
	if err != nil {
		return nil, err
	}
	return hs, nil
}

// atoi parses a non-negative decimal int.
func atoi(s string) (int, error) {
	v, err := strconv.ParseUint(s, 10, 31)
	return int(v), err
}

func splitLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}
