package main

import (
	"fmt"
	"io"

	"github.com/ndst-project/ndst/knobset"
)

// restorePendingKnobs runs before every command: when an ndst that changed
// kernel knobs (advise --verify) was killed before it could put them back,
// its restore record is applied first, and said on stderr.
func restorePendingKnobs(stderr io.Writer) {
	notef := func(format string, args ...any) { fmt.Fprintf(stderr, "ndst: "+format+"\n", args...) }
	if err := knobset.ApplyPending(notef); err != nil {
		fmt.Fprintf(stderr, "ndst: putting back the knobs of a killed ndst: %v\n", err)
	}
}
