package vmrig

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParse: the rig's output parser never panics; an accepted output has
// its commands numbered 1, 2, ... in order, Done only after a "done"
// marker, and parses the same on a second reading.
func FuzzParse(f *testing.F) {
	f.Add(goodOutput)
	f.Add("@@ndst-vm begin\n")
	f.Add("@@ndst-vm begin 1 x\n@@ndst-vm end 1\n")
	f.Add("@@ndst-vm begin 1 x\n@@ndst-vm stderr 1\n@@ndst-vm kmsg 1\n[ 1.0] a\n@@ndst-vm end 1 exit=-3 seconds=NaN\n")
	f.Add("@@ndst-vm host a=b c d=\n@@ndst-vm guest =x\n@@ndst-vm fault x\n@@ndst-vm dmesg\nz\n@@ndst-vm done\n")
	f.Add("@@ndst-vm bogus\n")
	f.Fuzz(func(t *testing.T, s string) {
		b, err := Parse(strings.NewReader(s))
		if err != nil {
			if b != nil {
				t.Fatalf("Parse(%q) = %+v with error %v; want no boot with an error", s, b, err)
			}
			return
		}
		for i, c := range b.Commands {
			if c.Index != i+1 {
				t.Fatalf("Parse(%q): command %d has index %d", s, i, c.Index)
			}
		}
		if b.Done && !strings.Contains(s, Marker+"done") {
			t.Fatalf("Parse(%q): Done without a done marker", s)
		}
		again, err := Parse(strings.NewReader(s))
		// Printed, not DeepEqual: a "seconds=NaN" is NaN both times.
		if err != nil || fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", b) {
			t.Fatalf("Parse(%q) differs on a second reading", s)
		}
	})
}
