package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// netnsSample is a state with two namespaces, each with lo, a link and the
// inner end of a veth pair whose outer end is in the initial namespace.
func netnsSample() *State {
	return &State{
		NextIfindex: 3,
		Devices:     []Device{{Ifindex: 1, Name: "veth0"}, {Ifindex: 2, Name: "veth1"}},
		Namespaces: []Namespace{
			{Name: "ndst0", NextIfindex: 3, Devices: []Device{{Ifindex: 1, Name: "lo", Flags: 1}, {Ifindex: 2, Name: "dummy0"}, {Ifindex: 3, Name: "eth0"}}},
			{Name: "ndst1", NextIfindex: 3, Flags: 7, Devices: []Device{{Ifindex: 1, Name: "lo"}, {Ifindex: 2, Name: "dummy0"}, {Ifindex: 3, Name: "eth0"}}},
		},
		Veths: []VethPair{
			{A: End{"", 1}, B: End{"ndst0", 3}},
			{A: End{"", 2}, B: End{"ndst1", 3}},
		},
	}
}

func equalNetns(a, b *State) bool {
	if !equalState(a, b) || len(a.Namespaces) != len(b.Namespaces) || len(a.Veths) != len(b.Veths) {
		return false
	}
	for i := range a.Namespaces {
		x, y := a.Namespaces[i], b.Namespaces[i]
		if x.Name != y.Name || x.NextIfindex != y.NextIfindex || x.Flags != y.Flags ||
			!equalState(&State{Devices: x.Devices}, &State{Devices: y.Devices}) {
			return false
		}
	}
	for i := range a.Veths {
		if a.Veths[i] != b.Veths[i] {
			return false
		}
	}
	return true
}

func TestNetnsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		st   *State
	}{
		{"sample", netnsSample()},
		{"empty namespace", &State{Namespaces: []Namespace{{Name: "a"}}}},
		{"unicode name", &State{Namespaces: []Namespace{{Name: "pod-é_1.x", NextIfindex: 1 << 30, Flags: 1 << 31}}}},
		{"pair inside the initial namespace", &State{Devices: []Device{{Ifindex: 4, Name: "a"}, {Ifindex: 9, Name: "b"}},
			Veths: []VethPair{{A: End{"", 4}, B: End{"", 9}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.st)
			if err != nil {
				t.Fatalf("Encode(%s) error = %v, want nil", tt.name, err)
			}
			if v := binary.LittleEndian.Uint16(b[6:]); v != 2 {
				t.Errorf("Encode(%s) wrote version %d, want 2", tt.name, v)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(%s)) error = %v, want nil", tt.name, err)
			}
			if !equalNetns(got, tt.st) {
				t.Errorf("Decode(Encode(%s)) = %+v, want %+v", tt.name, got, tt.st)
			}
			again, err := Encode(got)
			if err != nil || !bytes.Equal(again, b) {
				t.Errorf("Encode(Decode(Encode(%s))) = %x, %v; want %x, nil", tt.name, again, err, b)
			}
		})
	}
}

// TestLoadVersion1File loads a state file written by ndst before namespaces
// existed (format version 1, made by that release's Encode), and checks that
// saving the same state writes it byte for byte again.
func TestLoadVersion1File(t *testing.T) {
	path := filepath.Join("testdata", "v1", "three-devices.state")
	st, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s) error = %v, want nil", path, err)
	}
	want := &State{NextIfindex: 5, Devices: []Device{{Ifindex: 1, Name: "dummy0"}, {Ifindex: 2, Name: "dummy1", Flags: 1}, {Ifindex: 5, Name: "eth-old"}}}
	if !equalNetns(st, want) {
		t.Errorf("Load(%s) = %+v, want %+v", path, st, want)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := Encode(st); err != nil || !bytes.Equal(b, orig) {
		t.Errorf("Encode(Load(%s)) = %x, %v; want the file's own bytes %x (a state without namespaces stays version 1)", path, b, err, orig)
	}
	// Adding a namespace moves the file to version 2, which still loads.
	st.Namespaces = []Namespace{{Name: "ndst0", Devices: []Device{{Ifindex: 1, Name: "lo"}}}}
	out := filepath.Join(t.TempDir(), "state")
	if err := Save(out, st); err != nil {
		t.Fatal(err)
	}
	back, err := Load(out)
	if err != nil || !equalNetns(back, st) {
		t.Errorf("Load(Save(v1 + namespace)) = %+v, %v; want %+v", back, err, st)
	}
}

func TestNetnsEncodeRejectsInvalid(t *testing.T) {
	mod := func(f func(*State)) *State { s := netnsSample(); f(s); return s }
	tests := []struct {
		name string
		st   *State
		want string
	}{
		{"empty namespace name", mod(func(s *State) { s.Namespaces[0].Name = "" }), "empty"},
		{"slash in name", mod(func(s *State) { s.Namespaces[0].Name = "a/b" }), `contains '/'`},
		{"dotdot in name", mod(func(s *State) { s.Namespaces[0].Name = "a..b" }), `".."`},
		{"long name", mod(func(s *State) { s.Namespaces[0].Name = strings.Repeat("n", 65) }), "at most 64"},
		{"unsorted", mod(func(s *State) { s.Namespaces[0].Name = "zz" }), "ascending name order"},
		{"duplicate namespace", mod(func(s *State) { s.Namespaces[1].Name = "ndst0" }), "ascending name order"},
		{"negative cursor", mod(func(s *State) { s.Namespaces[1].NextIfindex = -1 }), "negative"},
		{"duplicate device in namespace", mod(func(s *State) { s.Namespaces[1].Devices[2].Name = "lo" }), `namespace ndst1: duplicate device name "lo"`},
		{"bad device order", mod(func(s *State) { s.Namespaces[0].Devices[2].Ifindex = 2 }), "namespace ndst0: devices not in strictly ascending"},
		{"pair to missing namespace", mod(func(s *State) { s.Veths[0].B.Netns = "nope" }), `no namespace "nope"`},
		{"pair to missing device", mod(func(s *State) { s.Veths[0].B.Ifindex = 9 }), "no device with ifindex 9"},
		{"end used twice", mod(func(s *State) { s.Veths[1].B = End{"ndst0", 3} }), "already an end"},
		{"ends reversed", mod(func(s *State) { s.Veths[0].A, s.Veths[0].B = s.Veths[0].B, s.Veths[0].A }), "must sort before"},
		{"pairs unsorted", mod(func(s *State) { s.Veths[0], s.Veths[1] = s.Veths[1], s.Veths[0] }), "ascending order"},
		{"pair with itself", mod(func(s *State) { s.Veths = s.Veths[:1]; s.Veths[0].B = s.Veths[0].A }), "already an end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := Encode(tt.st)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Encode(%s) = %d bytes, %v; want error wrapping ErrInvalid containing %q", tt.name, len(b), err, tt.want)
			}
		})
	}
}

// netnsBody builds a raw version 2 body: an empty initial namespace, then
// the raw namespace section.
func netnsBody(section ...[]byte) []byte {
	b := body(0, 0)
	for _, s := range section {
		b = append(b, s...)
	}
	return b
}

// nsEntry builds one raw namespace entry with its raw device entries.
func nsEntry(name string, next, flags, count uint64, devs ...[]byte) []byte {
	b := append([]byte{byte(len(name))}, name...)
	b = binary.AppendUvarint(b, next)
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, count)
	for _, d := range devs {
		b = append(b, d...)
	}
	return b
}

func uv(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.AppendUvarint(b, v)
	}
	return b
}

func TestNetnsDecodeCorrupt(t *testing.T) {
	lo := entry(1, 0, "lo")
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"version 2 with nothing", "without namespaces or veth pairs", sealed(2, netnsBody(uv(0, 0)))},
		{"section missing", "truncated in its namespace count", sealed(2, netnsBody())},
		{"absurd namespace count", "namespace count 1000000 cannot fit", sealed(2, netnsBody(uv(1000000), nsEntry("a", 0, 0, 0), uv(0)))},
		{"name cut", "runs past the end", sealed(2, netnsBody(uv(1), []byte{9, 'a', 'b', 'c', 'd', 'e'}))},
		{"bad name", `invalid name "a/b"`, sealed(2, netnsBody(uv(1), nsEntry("a/b", 0, 0, 0), uv(0)))},
		{"unsorted names", "ascending name order", sealed(2, netnsBody(uv(2), nsEntry("b", 0, 0, 0), nsEntry("a", 0, 0, 0), uv(0)))},
		{"cursor out of range", "ifindex cursor 2147483648 is out of range", sealed(2, netnsBody(uv(1), nsEntry("a", 1<<31, 0, 0), uv(0)))},
		{"absurd device count", "device count 99999 cannot fit", sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 99999, lo), uv(0)))},
		{"duplicate device", `namespace a: duplicate device name "lo"`, sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 2, lo, lo), uv(0)))},
		{"device entry bad", "namespace a: device entry 0: ifindexes not strictly ascending", sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 1, entry(0, 0, "lo")), uv(0)))},
		{"pair section missing", "truncated in its pair count", sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 1, lo)))},
		{"pair to missing namespace", "namespace 2 of 1 does not exist", sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 1, lo), uv(1, 2, 1, 1, 1)))},
		{"pair to missing device", "namespace a: no device with ifindex 4", sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 1, lo), uv(1, 1, 4, 1, 1)))},
		{"pair reversed", "ends are not in order", sealed(2, netnsBody(uv(2), nsEntry("a", 0, 0, 1, lo), nsEntry("b", 0, 0, 1, lo), uv(1, 2, 1, 1, 1)))},
		{"pair with itself", "already an end", sealed(2, netnsBody(uv(1), nsEntry("a", 0, 0, 1, lo), uv(1, 1, 1, 1, 1)))},
		{"trailing bytes", "after the last veth pair entry", sealed(2, append(netnsBody(uv(1), nsEntry("a", 0, 0, 0), uv(0)), 7))},
		{"v1 with a namespace section", "after the last device entry", sealed(1, netnsBody(uv(1), nsEntry("a", 0, 0, 0), uv(0)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := Decode(tt.data)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%s) = %+v, %v; want ErrCorrupt containing %q", tt.name, st, err, tt.want)
			}
		})
	}
}

func TestNetnsDecodeEveryTruncationAndFlip(t *testing.T) {
	full, err := Encode(netnsSample())
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < len(full); n++ {
		if st, err := Decode(full[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Decode(first %d of %d bytes) = %+v, %v; want ErrCorrupt", n, len(full), st, err)
		}
	}
	for i := range len(full) * 8 {
		b := bytes.Clone(full)
		b[i/8] ^= 1 << (i % 8)
		if st, err := Decode(b); err == nil {
			t.Fatalf("Decode(bit %d flipped) = %+v, nil; want an error", i, st)
		}
	}
}

func TestNetnsNameProblem(t *testing.T) {
	for _, ok := range []string{"ndst", "ndst0", "pod_1.a-b", "é", "名前", strings.Repeat("x", 64)} {
		if p := NetnsNameProblem(ok); p != "" {
			t.Errorf("NetnsNameProblem(%q) = %q, want \"\"", ok, p)
		}
	}
	for _, bad := range []string{"", ".", "..", "a..b", "a/b", "a b", "a\x00", "\xff", strings.Repeat("x", 65), "a:b", "$x"} {
		if p := NetnsNameProblem(bad); p == "" {
			t.Errorf("NetnsNameProblem(%q) = \"\", want a problem", bad)
		}
	}
}
