package emu

import (
	"context"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// A run without a preemption model gets the line's default: none, or lazy
// on line 7.2 (x86 7.x has no none), saying so; none given there is refused.
func TestDefaultPreemptByLine(t *testing.T) {
	for _, tc := range []struct{ line, want, note string }{
		{"6.18", "none", ""},
		{"7.2", "lazy", "has no PREEMPT_NONE"},
	} {
		b, err := Open(context.Background(), Config{Profile: tc.line, HZ: 250, CPUs: 1, Ephemeral: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		res, err := b.Add(context.Background(), ndst.AddRequest{Count: 2, Template: mustTemplate(t)})
		b.Close()
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		noted := strings.Contains(strings.Join(res.Notes, "\n"), tc.note)
		if *res.Preempt != tc.want || tc.note != "" && !noted {
			t.Errorf("%s: preempt %s, notes %q; want %s noting %q", tc.line, *res.Preempt, res.Notes, tc.want, tc.note)
		}
	}
	if _, err := Open(context.Background(), Config{Profile: "7.2", HZ: 250, CPUs: 1, Preempt: "none", Ephemeral: true}); err == nil || !strings.Contains(err.Error(), "cannot run it") {
		t.Errorf("7.2 --preempt none: %v, want a refusal", err)
	}
}
