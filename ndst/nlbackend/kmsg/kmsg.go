// Package kmsg reads the kernel log the way dmesg does, from /dev/kmsg, so
// that a teardown that waits for a device can show the kernel's own words
// about it ("unregister_netdevice: waiting for X to become free. Usage
// count = N", and the ref_tracker lines that name the holders on kernels
// built with CONFIG_NET_DEV_REFCNT_TRACKER).
//
// Invariants (safefile's rules, for the one character device ndst reads):
//   - Only the kernel log device is opened: the path must be a character
//     device with the kernel log's numbers (1:11), checked with lstat before
//     the open and with fstat on the opened descriptor; a link, a file, a
//     FIFO or /dev/null bind-mounted over it is refused with what it is.
//   - The open is non-blocking and so is every read: a Reader never waits
//     for the kernel to log something. One call reads at most a bounded
//     number of records, each into a bounded buffer.
//   - A Reader starts at the end of the log (what the kernel logs from then
//     on), and reports records the kernel overwrote before they were read
//     (Lost) instead of failing.
package kmsg

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Path is the kernel log device.
const Path = "/dev/kmsg"

// The kernel log device's numbers (Documentation/admin-guide/devices.txt:
// major 1, minor 11 is /dev/kmsg).
const (
	devMajor = 1
	devMinor = 11
)

// MaxRecord bounds one record: the kernel refuses a read buffer smaller
// than the record, and its extended records are at most 8 KiB
// (CONSOLE_EXT_LOG_MAX); twice that is kept for headroom.
const MaxRecord = 16 << 10

// Record is one kernel log record.
type Record struct {
	Seq      uint64
	Facility int
	Level    int   // 0 (emerg) .. 7 (debug)
	TimeUS   int64 // microseconds since boot (CLOCK_MONOTONIC)
	// Text is the message with the kernel's escapes undone: a record may
	// hold several lines (ref_tracker prints a stack in one record).
	Text string
}

// ErrMalformed is wrapped by ParseRecord's errors.
var ErrMalformed = errors.New("malformed kernel log record")

// ParseRecord parses one record as /dev/kmsg gives it:
// "PRI,SEQ,TIMESTAMP,FLAGS[,...];MESSAGE\n" followed by optional
// " KEY=VALUE\n" continuation lines, with non-printable bytes of the
// message escaped as \xNN.
func ParseRecord(b []byte) (Record, error) {
	var r Record
	head, rest, ok := bytes.Cut(b, []byte{';'})
	if !ok {
		return r, fmt.Errorf("%w: no ';' after the header", ErrMalformed)
	}
	f := strings.Split(string(head), ",")
	if len(f) < 4 {
		return r, fmt.Errorf("%w: header %q has %d fields, want at least 4", ErrMalformed, head, len(f))
	}
	pri, err1 := strconv.ParseUint(f[0], 10, 32)
	seq, err2 := strconv.ParseUint(f[1], 10, 64)
	ts, err3 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil || ts < 0 {
		return r, fmt.Errorf("%w: header %q", ErrMalformed, head)
	}
	r.Facility, r.Level, r.Seq, r.TimeUS = int(pri>>3), int(pri&7), seq, ts
	msg, _, _ := bytes.Cut(rest, []byte{'\n'}) // the dictionary follows
	r.Text = unescape(string(msg))
	return r, nil
}

// unescape undoes the kernel's \xNN escapes (printk escapes every
// non-printable byte, and a backslash, that way).
func unescape(s string) string {
	if !strings.Contains(s, `\x`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) && s[i+1] == 'x' {
			if v, err := strconv.ParseUint(s[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Lines renders the record as dmesg does, one "[  SECONDS.MICROS] text"
// line per line of its text (continuation lines keep the timestamp).
func (r Record) Lines() []string {
	ts := fmt.Sprintf("[%5d.%06d]", r.TimeUS/1e6, r.TimeUS%1e6)
	var out []string
	for _, l := range strings.Split(strings.TrimRight(r.Text, "\n"), "\n") {
		out = append(out, ts+" "+l)
	}
	return out
}

// Teardown reports whether a record's text is one of the kernel's messages
// about a device that cannot be freed: the wait loop's "waiting for X to
// become free" (netdev_wait_allrefs, and netdev_wait_allrefs_any since
// 5.17) and the reference tracker's report of the holders.
func Teardown(text string) bool {
	return strings.HasPrefix(text, "ref_tracker:") ||
		(strings.Contains(text, "waiting for ") && strings.Contains(text, " to become free"))
}

// Waiting parses "unregister_netdevice: waiting for NAME to become free.
// Usage count = N" into the device's name and its usage count.
func Waiting(text string) (name string, usage int, ok bool) {
	_, rest, found := strings.Cut(text, "waiting for ")
	if !found {
		return "", 0, false
	}
	name, rest, found = strings.Cut(rest, " to become free")
	if !found || name == "" || strings.ContainsAny(name, " /") {
		return "", 0, false
	}
	_, count, found := strings.Cut(rest, "Usage count = ")
	if !found {
		return name, 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil {
		return name, 0, false
	}
	return name, n, true
}
