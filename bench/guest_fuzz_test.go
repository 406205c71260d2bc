package bench

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzParseGuestLog: the guest-transcript parser never panics; when it
// accepts a transcript it returns a valid cost table and at least one
// delete, every recorded run under a count it saw, and it says the same
// on a second reading; when it refuses, it returns nothing else.
func FuzzParseGuestLog(f *testing.F) {
	f.Add([]byte(transcript))
	f.Add([]byte("@@ndst-vm begin\n@@ndst-vm stderr\n@@ndst-vm end\n"))
	f.Add([]byte("@@ndst-vm begin 1 --json calibrate\n{\"table\":{\"costs_ns\":{\"register\":-5}}}\n@@ndst-vm stderr 1\n"))
	f.Add([]byte("@@ndst-vm begin 1 --json del 1 2\n{\"op\":\"del\",\"count\":-3,\"wall_ns\":-1}\n@@ndst-vm stderr 1\n@@ndst-vm end 1 exit=1\n"))
	f.Add([]byte("@@ndst-vm \n@@ndst-vm guest\nplain\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		table, rec, err := ParseGuestLog(bytes.NewReader(b))
		if err != nil {
			if table != nil || rec != nil {
				t.Fatalf("ParseGuestLog(%q) = %v, %v with error %v; want nothing with an error", b, table, rec, err)
			}
			return
		}
		if table == nil || rec == nil || len(rec.Del) == 0 {
			t.Fatalf("ParseGuestLog(%q) accepted without a table or a delete: %v, %+v", b, table, rec)
		}
		if err := table.Validate(); err != nil {
			t.Fatalf("ParseGuestLog(%q) returned a table Validate refuses: %v", b, err)
		}
		for n, byBatch := range rec.Del {
			for batch, runs := range byBatch {
				if len(runs) == 0 || (batch != "batched" && batch != "one-by-one") {
					t.Fatalf("ParseGuestLog(%q): Del[%d][%q] = %v", b, n, batch, runs)
				}
			}
		}
		t2, rec2, err := ParseGuestLog(bytes.NewReader(b))
		if err != nil || !reflect.DeepEqual(t2, table) || !reflect.DeepEqual(rec2, rec) {
			t.Fatalf("ParseGuestLog(%q) differs on a second reading", b)
		}
	})
}
