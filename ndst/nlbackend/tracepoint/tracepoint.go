// Package tracepoint opens the kernel's tracepoints as perf events
// (perf_event_open(2), PERF_TYPE_TRACEPOINT) and reads their records: the
// event's own fields, stamped by the kernel on CLOCK_MONOTONIC as it happens.
//
// A tracepoint is opened by its id, which only tracefs publishes
// (events/SYSTEM/NAME/id, with the record's layout in .../format); package
// pseudofs reads those from the host's tracefs, or from a private mount
// where the host has none. Opening the events needs root (or a
// perf_event_paranoid that allows it); nothing on the host changes, and the
// events end with Close or the process.
//
// Invariants: reading never blocks (the rings are memory-mapped and read in
// place); a record the kernel had to drop (its ring full) is counted in Lost,
// never silently missing; every error says which event or CPU failed.
package tracepoint

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

var ne = binary.NativeEndian

// Field is one field of a tracepoint's record.
type Field struct {
	Offset, Size int
	Signed       bool
}

// Event is one tracepoint: its id and its record's fields.
type Event struct {
	System, Name string
	ID           uint64
	Fields       map[string]Field
}

// String is SYSTEM:NAME, as perf names it.
func (e Event) String() string { return e.System + ":" + e.Name }

// Sample is one record of an event.
type Sample struct {
	Time int64 // CLOCK_MONOTONIC, ns
	CPU  int
	ID   uint64 // the event's id (common_type)
	Raw  []byte // the record, as its format lays it out
}

// Uint reads an unsigned field of e from one of its records (0, false when
// the field is missing, not 1, 2, 4 or 8 bytes, or beyond the record).
func (e Event) Uint(raw []byte, field string) (uint64, bool) {
	f, ok := e.Fields[field]
	if !ok || f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return 0, false
	}
	b := raw[f.Offset : f.Offset+f.Size]
	switch f.Size {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(ne.Uint16(b)), true
	case 4:
		return uint64(ne.Uint32(b)), true
	case 8:
		return ne.Uint64(b), true
	}
	return 0, false
}

// Int reads a signed field (sign-extended from its size).
func (e Event) Int(raw []byte, field string) (int64, bool) {
	u, ok := e.Uint(raw, field)
	if !ok {
		return 0, false
	}
	switch e.Fields[field].Size {
	case 1:
		return int64(int8(u)), true
	case 2:
		return int64(int16(u)), true
	case 4:
		return int64(int32(u)), true
	}
	return int64(u), true
}

// Str reads a fixed-size char array field (up to its first NUL).
func (e Event) Str(raw []byte, field string) (string, bool) {
	f, ok := e.Fields[field]
	if !ok || f.Offset < 0 || f.Offset+f.Size > len(raw) {
		return "", false
	}
	b := raw[f.Offset : f.Offset+f.Size]
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b), true
}

// ParseFormat reads the fields of a tracepoint's format file:
//
//	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
//
// A field declared as an array ("char comm[16]") is named without its
// brackets.
func ParseFormat(format string) map[string]Field {
	out := map[string]Field{}
	for _, l := range strings.Split(format, "\n") {
		l = strings.TrimSpace(l)
		decl, rest, ok := strings.Cut(l, ";")
		if !ok || !strings.HasPrefix(decl, "field:") {
			continue
		}
		decl = strings.TrimSpace(strings.TrimPrefix(decl, "field:"))
		if i := strings.IndexByte(decl, '['); i >= 0 {
			decl = decl[:i]
		}
		name := decl[strings.LastIndexAny(decl, " *")+1:]
		if name == "" {
			continue
		}
		f := Field{Offset: -1}
		for _, kv := range strings.Split(rest, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(kv), ":")
			n, err := strconv.Atoi(v)
			if err != nil {
				continue
			}
			switch k {
			case "offset":
				f.Offset = n
			case "size":
				f.Size = n
			case "signed":
				f.Signed = n != 0
			}
		}
		if f.Offset >= 0 && f.Size > 0 {
			out[name] = f
		}
	}
	return out
}

// parseName splits "SYSTEM:NAME".
func parseName(s string) (string, string, error) {
	sys, name, ok := strings.Cut(s, ":")
	if !ok || sys == "" || name == "" || strings.ContainsAny(s, "/ ") {
		return "", "", fmt.Errorf("tracepoint %q: want SYSTEM:NAME", s)
	}
	return sys, name, nil
}
