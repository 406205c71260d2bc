package ndst

import (
	"fmt"

	"github.com/ndst-project/ndst/ifname"
)

// VLANs and macvlans: "add N --kind vlan --parent NAME" makes N VLANs on
// that device, with ids VLANID .. VLANID+N-1 (from 1 by default), named
// NAME.ID as iproute2 users name them (or from --name, whose %d is the
// id); "--kind macvlan" makes N macvlans named from the template
// (macvlan%d by default). Deleting the parent deletes its children.

// Link kinds of the children.
const (
	KindVLAN    = "vlan"
	KindMacvlan = "macvlan"
)

// MaxVLANID is the largest VLAN id (802.1Q: 1..4094).
const MaxVLANID = 4094

// MacvlanTemplate names macvlans when the request has no template.
const MacvlanTemplate = "macvlan%d"

// IsChildKind reports whether kind makes devices on a parent.
func IsChildKind(kind string) bool { return kind == KindVLAN || kind == KindMacvlan }

// CheckChildren validates the child part of an add: a parent for exactly
// the child kinds, and VLAN ids within 1..4094.
func (r *AddRequest) CheckChildren() error {
	child := IsChildKind(r.Kind)
	switch {
	case child && r.Parent == "":
		return Usagef("--kind %s needs --parent NAME, the device the %ss go on", r.Kind, r.Kind)
	case !child && r.Parent != "":
		return Usagef("--parent %s applies to --kind vlan or macvlan, not %s", r.Parent, kindOrDefault(r.Kind))
	case !child:
		return nil
	}
	if err := ifname.ValidateName(r.Parent); err != nil {
		return Usagef("--parent: %v", err)
	}
	if !r.Addrs.IsZero() {
		return Usagef("--addr4, --addr6 and --up apply to plain devices, not to %ss", r.Kind)
	}
	if r.Kind == KindMacvlan {
		if r.VLANID != 0 {
			return Usagef("--vlan-id applies to --kind vlan, not macvlan")
		}
		return nil
	}
	if r.VLANID == 0 {
		r.VLANID = 1
	}
	if r.VLANID < 1 || r.VLANID > MaxVLANID || r.Count > MaxVLANID-r.VLANID+1 {
		return Usagef("VLAN ids %d..%d: want ids within 1..%d", r.VLANID, r.VLANID+r.Count-1, MaxVLANID)
	}
	return nil
}

func kindOrDefault(k string) string {
	if k == "" {
		return "dummy"
	}
	return k
}

// VLANName is the name of the VLAN with id on parent: the template's, when
// the request has one (its %d is the id), else PARENT.ID.
func VLANName(parent string, id int, t Template) (string, error) {
	if t != (Template{}) {
		return t.Name(id), nil
	}
	name := fmt.Sprintf("%s.%d", parent, id)
	if err := ifname.ValidateName(name); err != nil {
		return "", Usagef("VLAN name %s: %v; name them with --name (its %%d is the id)", name, err)
	}
	if p := ifname.HostileProblem(name); p != "" {
		return "", Usagef("VLAN name %s: such names %s; name them with --name (its %%d is the id)", name, p)
	}
	return name, nil
}
