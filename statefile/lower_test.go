package statefile

import (
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestLowersRoundTrip(t *testing.T) {
	s := &State{
		NextIfindex: 4,
		Devices:     []Device{{Name: "ifb0", Ifindex: 1}, {Name: "ifb0.10", Ifindex: 2}, {Name: "macvlan0", Ifindex: 3}},
		Namespaces: []Namespace{{Name: "ns1", NextIfindex: 3, Devices: []Device{
			{Name: "lo", Ifindex: 1, Flags: 2}, {Name: "dummy0", Ifindex: 2}, {Name: "dummy0.7", Ifindex: 3}}}},
		Lowers: []LowerLink{
			{Child: End{Ifindex: 2}, Parent: 1, ID: 10},
			{Child: End{Ifindex: 3}, Parent: 1},
			{Child: End{Netns: "ns1", Ifindex: 3}, Parent: 2, ID: 7},
		},
	}
	b, err := Encode(s)
	if err != nil {
		t.Fatalf("Encode = %v", err)
	}
	if v := binary.LittleEndian.Uint16(b[6:]); v != 3 {
		t.Errorf("Encode wrote version %d, want 3", v)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode = %v", err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("Decode(Encode(s)) = %+v, want %+v", got, s)
	}
	s.Lowers = nil
	if b, _ = Encode(s); binary.LittleEndian.Uint16(b[6:]) != 2 {
		t.Errorf("a state without lower links is written as version %d, want 2", binary.LittleEndian.Uint16(b[6:]))
	}
}

func TestLowersInvalid(t *testing.T) {
	devs := []Device{{Name: "a", Ifindex: 1}, {Name: "b", Ifindex: 2}}
	for _, c := range []struct {
		l    []LowerLink
		want string
	}{
		{[]LowerLink{{Child: End{Ifindex: 2}, Parent: 5, ID: 1}}, "no lower device with ifindex 5"},
		{[]LowerLink{{Child: End{Ifindex: 2}, Parent: 2, ID: 1}}, "no lower device with ifindex 2"},
		{[]LowerLink{{Child: End{Ifindex: 3}, Parent: 1, ID: 1}}, "no device with ifindex 3"},
		{[]LowerLink{{Child: End{Ifindex: 2}, Parent: 1, ID: 4095}}, "VLAN id 4095 is out of 1..4094"},
		{[]LowerLink{{Child: End{Ifindex: 2}, Parent: 1}, {Child: End{Ifindex: 2}, Parent: 1}}, "not in strictly ascending order"},
		{[]LowerLink{{Child: End{Netns: "x", Ifindex: 2}, Parent: 1}}, `no namespace "x"`},
	} {
		_, err := Encode(&State{Devices: devs, Lowers: c.l})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Encode(lowers %v) = %v, want ErrInvalid with %q", c.l, err, c.want)
		}
	}
}
