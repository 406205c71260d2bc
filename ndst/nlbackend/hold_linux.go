package nlbackend

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/heldref"
)

// startHolds starts the references Options.Holds asks for on the devices
// of sel (a device named by name or ifindex), and returns the function that releases them. A rule naming a
// device that is not deleted is a usage error, and nothing is held.
func (b *Backend) startHolds(res *ndst.Result, sel []link) (func(), error) {
	var targets []link
	var for_ []time.Duration
	for _, x := range b.o.Holds {
		d := x.For
		if x.Forever || d > heldref.MaxHold {
			d = heldref.MaxHold
		}
		found := false
		for _, l := range sel {
			if x.Device == "" || x.Device == l.Name || x.Device == strconv.Itoa(l.Index) {
				targets, for_ = append(targets, l), append(for_, d)
				found = true
			}
		}
		if !found {
			return nil, ndst.Usagef("--hold socket@%s: no device %s among those deleted", x.Device, x.Device)
		}
	}
	if len(targets) > maxHolds {
		return nil, ndst.Usagef("--hold: %d devices to hold, at most %d (name one with socket@DEVICE)", len(targets), maxHolds)
	}
	var held []*heldref.Hold
	release := func() {
		for _, h := range held {
			h.Release()
		}
	}
	var names []string
	for i, l := range targets {
		h, err := heldref.Start(b.ns, l.Index, for_[i])
		if err != nil {
			release()
			return nil, fmt.Errorf("--hold: %w", err)
		}
		held = append(held, h)
		names = append(names, l.Name)
	}
	if len(held) > 0 {
		how := "until ndst ends"
		if x := b.o.Holds[0]; !x.Forever && len(b.o.Holds) == 1 {
			how = "for " + x.For.String()
		}
		res.Notes = append(res.Notes, fmt.Sprintf("--hold: a packet socket's send holds a reference to %s %s (brought up for it)", strings.Join(names, ", "), how))
	}
	return release, nil
}
