package nlbackend

import (
	"reflect"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

func TestAllocate(t *testing.T) {
	tm, _ := ndst.ParseTemplate("dummy%d")
	tests := []struct {
		name  string
		links []link
		count int
		want  []string
	}{
		{"empty", nil, 3, []string{"dummy0", "dummy1", "dummy2"}},
		{"holes", []link{{Name: "lo"}, {Name: "dummy1"}, {Name: "dummy3"}}, 3, []string{"dummy0", "dummy2", "dummy4"}},
		{"non-canonical names do not count", []link{{Name: "dummy01"}, {Name: "dummyx"}}, 2, []string{"dummy0", "dummy1"}},
		{"altnames count", []link{{Name: "foo", AltNames: []string{"dummy0"}}}, 1, []string{"dummy1"}},
	}
	for _, tt := range tests {
		got, err := allocate(tm, tt.links, tt.count)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: allocate(dummy%%d, %v, %d) = %v, %v; want %v", tt.name, tt.links, tt.count, got, err, tt.want)
		}
	}
	// A template with room for 10 names (one digit) cannot give 11.
	small, _ := ndst.ParseTemplate("abcdefghijklmn%d")
	if got, err := allocate(small, nil, 11); err == nil || !ndst.IsUsage(err) {
		t.Errorf("allocate(abcdefghijklmn%%d, nil, 11) = %v, %v; want a usage error", got, err)
	}
	if got, err := allocate(small, nil, 10); err != nil || len(got) != 10 || got[9] != "abcdefghijklmn9" {
		t.Errorf("allocate(abcdefghijklmn%%d, nil, 10) = %v, %v; want 10 names ending abcdefghijklmn9", got, err)
	}
}

func TestSelectLinks(t *testing.T) {
	own := GroupOwned
	links := []link{
		{Index: 1, Name: "lo", Kind: "loopback"},
		{Index: 2, Name: "d0", Kind: "ifb", Group: own},
		{Index: 3, Name: "d1", Kind: "ifb", Group: own},
		{Index: 4, Name: "x", Kind: "ifb"}, // foreign
		{Index: 5, Name: "v1", Kind: "veth", Group: own, Peer: 6, PeerHere: true},
		{Index: 6, Name: "v0", Kind: "veth", Group: own, Peer: 5, PeerHere: true},
		{Index: 7, Name: "w0", Kind: "veth", Group: own, Peer: 8, PeerHere: true},
		{Index: 8, Name: "w1", Kind: "veth", Peer: 7, PeerHere: true},              // foreign peer
		{Index: 9, Name: "z0", Kind: "veth", Group: own, Peer: 3, PeerHere: false}, // peer elsewhere
	}
	idx := func(ls []link) []int {
		var out []int
		for _, l := range ls {
			out = append(out, l.Index)
		}
		return out
	}
	tests := []struct {
		start, stop  int
		want         []int
		extra, skips int
	}{
		{1, 100, []int{2, 3, 5, 6}, 0, 5}, // lo, x, w0 (foreign peer), w1, z0
		{2, 3, []int{2, 3}, 0, 0},
		{1, 1, nil, 0, 1},
		{5, 5, []int{5, 6}, 1, 0}, // the peer goes with its pair
		{6, 7, []int{5, 6}, 1, 1},
		{10, 20, nil, 0, 0},
	}
	for _, tt := range tests {
		sel, extra, skipped := selectLinks(links, ndst.DelRequest{Start: tt.start, Stop: tt.stop})
		if !reflect.DeepEqual(idx(sel), tt.want) || extra != tt.extra || skipped != tt.skips {
			t.Errorf("selectLinks(links, %d, %d) = %v, %d, %d; want %v, %d, %d",
				tt.start, tt.stop, idx(sel), extra, skipped, tt.want, tt.extra, tt.skips)
		}
	}
	// By name: only the matching links (a veth's peer still goes with it);
	// a foreign link that does not match is not even counted as skipped.
	for _, tt := range []struct {
		match        string
		want         []int
		extra, skips int
	}{
		{"d*", []int{2, 3}, 0, 0},
		{"v1", []int{5, 6}, 1, 0},
		{"?0", []int{2, 5, 6}, 1, 2}, // d0, v0 (with v1); w0 (foreign peer) and z0 (peer elsewhere) skipped
		{"nomatch*", nil, 0, 0},
	} {
		sel, extra, skipped := selectLinks(links, ndst.DelRequest{Start: 1, Stop: 100, Match: tt.match})
		if !reflect.DeepEqual(idx(sel), tt.want) || extra != tt.extra || skipped != tt.skips {
			t.Errorf("selectLinks(links, --match %q) = %v, %d, %d; want %v, %d, %d", tt.match, idx(sel), extra, skipped, tt.want, tt.extra, tt.skips)
		}
	}
}

func TestMessageLayout(t *testing.T) {
	var m msg
	appendDelLink(&m, 7, 0, GroupOwned)
	// nlmsghdr 16 + ifinfomsg 16 + IFLA_GROUP attr 8.
	if len(m.b) != 40 || native.Uint32(m.b) != 40 || native.Uint32(m.b[8:]) != 7 {
		t.Fatalf("appendDelLink(group) = % x, want a 40-byte message with seq 7", m.b)
	}
	l, err := parseLink(m.b[16:])
	if err != nil || l.Group != GroupOwned || l.Index != 0 {
		t.Errorf("parseLink(del message body) = %+v, %v; want group %#x, index 0", l, err, GroupOwned)
	}
	m.b = nil
	appendNewLink(&m, 1, "veth", "v0", "v1", GroupOwned)
	if int(native.Uint32(m.b)) != len(m.b) || len(m.b)%4 != 0 {
		t.Errorf("appendNewLink(veth) length field %d, buffer %d; want equal and 4-aligned", native.Uint32(m.b), len(m.b))
	}
	l, err = parseLink(m.b[16:])
	if err != nil || l.Name != "v0" || l.Kind != "veth" || l.Group != GroupOwned {
		t.Errorf("parseLink(new veth body) = %+v, %v; want name v0 kind veth group %#x", l, err, GroupOwned)
	}
}
