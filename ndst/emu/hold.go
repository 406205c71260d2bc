package emu

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/netdev"
	"github.com/ndst-project/ndst/sim"
)

// ParseHold parses one --hold rule: HOLDER[@DEVICE]=DURATION|forever, for
// example "dst=30s", "in_device@dummy3=forever".
func ParseHold(s string) (netdev.Hold, error) {
	known := strings.Join(netdev.HoldableNames, ", ")
	who, dur, ok := strings.Cut(s, "=")
	if !ok || who == "" || dur == "" {
		return netdev.Hold{}, ndst.Usagef("--hold %q: want HOLDER[@DEVICE]=DURATION or HOLDER[@DEVICE]=forever (holders: %s)", s, known)
	}
	name, dev, _ := strings.Cut(who, "@")
	h, ok := netdev.HolderByName(name)
	if !ok {
		return netdev.Hold{}, ndst.Usagef("--hold %q: unknown holder %q (holders: %s)", s, name, known)
	}
	if strings.Contains(who, "@") {
		if err := ifname.ValidateName(dev); err != nil {
			return netdev.Hold{}, ndst.Usagef("--hold %q: device %v", s, err)
		}
	}
	x := netdev.Hold{Holder: h, Device: dev}
	if dur == "forever" {
		x.Forever = true
		return x, nil
	}
	d, err := time.ParseDuration(dur)
	if err != nil || d < 0 || d > 24*time.Hour {
		return netdev.Hold{}, ndst.Usagef("--hold %q: %q is not a duration between 0 and 24h, nor forever", s, dur)
	}
	x.For = sim.Time(d)
	return x, nil
}

// checkHolds refuses a --hold rule for a device outside the range deleted;
// a rule that names its device by ifindex is resolved to the device's name.
func (b *Backend) checkHolds(lo, hi int) error {
	for i, x := range b.r.cfg.Holds {
		if x.Device == "" {
			continue
		}
		found := false
		for _, d := range b.state.Devices[lo:hi] {
			if d.Name == x.Device || strconv.Itoa(int(d.Ifindex)) == x.Device {
				b.r.cfg.Holds[i].Device = d.Name
				found = true
				break
			}
		}
		if !found {
			return ndst.Usagef("--hold %s@%s: no device named %s, nor with ifindex %s, among those deleted", x.Holder, x.Device, x.Device, x.Device)
		}
	}
	return nil
}

// describeHolds says what the rules make the devices wait for.
func describeHolds(holds []netdev.Hold) string {
	var l []string
	for _, x := range holds {
		who := "every device"
		if x.Device != "" {
			who = x.Device
		}
		how := "forever"
		if !x.Forever {
			how = fmt.Sprintf("%v after unregister", time.Duration(x.For))
		}
		l = append(l, fmt.Sprintf("%s holds %s %s", x.Holder, who, how))
	}
	return strings.Join(l, "; ")
}
