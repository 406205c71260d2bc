package tracepoint

import (
	"encoding/binary"
	"testing"
)

// The format of workqueue_execute_start and sched_switch on 6.18, as tracefs
// prints them.
const wqFormat = "name: workqueue_execute_start\nID: 480\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:void * work;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;\n\nprint fmt: \"work struct %p: function %ps\", REC->work, REC->function\n"

const switchFormat = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"

func TestParseFormat(t *testing.T) {
	f := ParseFormat(wqFormat)
	if got := f["function"]; got != (Field{Offset: 16, Size: 8}) {
		t.Errorf("function = %+v, want offset 16 size 8", got)
	}
	if got := f["common_pid"]; got != (Field{Offset: 4, Size: 4, Signed: true}) {
		t.Errorf("common_pid = %+v", got)
	}
	if _, ok := f["missing"]; ok {
		t.Errorf("a missing field was found")
	}
	s := ParseFormat(switchFormat)
	if got := s["prev_comm"]; got != (Field{Offset: 8, Size: 16}) {
		t.Errorf("prev_comm = %+v, want the array named without brackets", got)
	}
}

func TestFields(t *testing.T) {
	e := Event{Fields: ParseFormat(switchFormat)}
	raw := make([]byte, 40)
	copy(raw[8:], "kworker/0:1\x00")
	binary.NativeEndian.PutUint32(raw[24:], uint32(0xffffffff)) // -1
	binary.NativeEndian.PutUint64(raw[32:], 2)
	if s, ok := e.Str(raw, "prev_comm"); !ok || s != "kworker/0:1" {
		t.Errorf("prev_comm = %q, %v", s, ok)
	}
	if v, ok := e.Int(raw, "prev_pid"); !ok || v != -1 {
		t.Errorf("prev_pid = %d, %v; want -1 (sign-extended)", v, ok)
	}
	if v, ok := e.Uint(raw, "prev_state"); !ok || v != 2 {
		t.Errorf("prev_state = %d, %v", v, ok)
	}
	if _, ok := e.Uint(raw[:30], "prev_state"); ok {
		t.Errorf("a field beyond the record was read")
	}
}

func TestParseName(t *testing.T) {
	for _, bad := range []string{"", "sched", ":x", "x:", "a/b:c", "a:b c"} {
		if _, _, err := parseName(bad); err == nil {
			t.Errorf("parseName(%q) accepted", bad)
		}
	}
}
