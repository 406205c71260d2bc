package nlbackend

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ndst-project/ndst/ndst"
	"golang.org/x/sys/unix"
)

// encodeLink is the inverse of parseLink for the fields it reads: an
// RTM_NEWLINK message (header included) describing l.
func encodeLink(seq uint32, l link) []byte {
	var m msg
	off := m.begin(unix.RTM_NEWLINK, unix.NLM_F_MULTI, seq)
	ifi := len(m.b)
	m.ifinfo(int32(l.Index))
	if l.Kind == "loopback" {
		native.PutUint16(m.b[ifi+2:], unix.ARPHRD_LOOPBACK)
	}
	if l.Up {
		native.PutUint32(m.b[ifi+8:], unix.IFF_UP)
	}
	m.str(unix.IFLA_IFNAME, l.Name)
	m.u32(unix.IFLA_GROUP, l.Group)
	if l.Peer != 0 {
		m.u32(unix.IFLA_LINK, uint32(int32(l.Peer)))
	}
	if !l.PeerHere {
		m.u32(unix.IFLA_LINK_NETNSID, uint32(int32(l.PeerNsid)))
	}
	if len(l.AltNames) > 0 {
		p := m.nest(unix.IFLA_PROP_LIST)
		for _, a := range l.AltNames {
			m.str(unix.IFLA_ALT_IFNAME, a)
		}
		m.unnest(p)
	}
	if l.Kind != "" && l.Kind != "loopback" {
		li := m.nest(unix.IFLA_LINKINFO)
		m.attr(unix.IFLA_INFO_KIND, []byte(l.Kind))
		m.unnest(li)
	}
	m.end(off)
	return m.b
}

// firstSeq is the sequence number of the first message in b, so that the
// fuzzer's inputs are read as the answer to the request they answer.
func firstSeq(b []byte) uint32 {
	if len(b) < unix.SizeofNlMsghdr {
		return 0
	}
	return native.Uint32(b[8:])
}

// FuzzDecodeDatagram feeds arbitrary datagrams to the netlink decoding
// (the link dump parser and the acknowledgement decoder). It must never
// panic or read out of bounds, and every link it decodes must survive a
// round trip through encodeLink. The seed corpus in
// testdata/fuzz/FuzzDecodeDatagram holds datagrams the 6.18 kernel sent
// (TestWriteFuzzCorpus writes them again).
func FuzzDecodeDatagram(f *testing.F) {
	f.Add(encodeLink(1, link{Index: 2, Name: "ifb0", Kind: "ifb", Group: GroupOwned, PeerHere: true}))
	f.Add(encodeLink(7, link{Index: 5, Name: "v1", Kind: "veth", Peer: 6, Up: true, AltNames: []string{"alt"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq := firstSeq(b)
		links, done, _, err := parseDumpChunk(b, seq, nil)
		if err != nil && done {
			t.Fatalf("parseDumpChunk = done and error %v", err)
		}
		for _, l := range links {
			if l.Name == "" && len(l.AltNames) == 0 {
				continue
			}
			clean := l
			clean.Name = unix.ByteSliceToString([]byte(l.Name))
			again, _, _, err := parseDumpChunk(encodeLink(seq, clean), seq, nil)
			if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], clean) {
				t.Fatalf("round trip of %+v = %+v, %v", clean, again, err)
			}
		}
		msgs, err := syscall.ParseNetlinkMessage(b)
		if err != nil {
			return
		}
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_ERROR {
				e := ackError(m)
				if len(m.Data) >= 4 && native.Uint32(m.Data) == 0 && e != nil {
					t.Fatalf("ackError of errno 0 = %v, want nil", e)
				}
			}
		}
	})
}

// TestWriteFuzzCorpus records real kernel datagrams as the fuzz seed
// corpus: a link dump of a namespace with lo, ifb links (one with an
// alternative name) and a veth pair, and the extended acknowledgement of
// a refused create. It runs only with NDST_WRITE_CORPUS=1 (as root).
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("NDST_WRITE_CORPUS") != "1" {
		t.Skip("writes testdata/fuzz/FuzzDecodeDatagram; set NDST_WRITE_CORPUS=1 to run")
	}
	b := openFresh(t, Options{Kind: "ifb", KindExplicit: true})
	mustAdd(t, b, ndst.AddRequest{Count: 3})
	mustAdd(t, b, ndst.AddRequest{Count: 2, Kind: "veth"})
	l, err := testHandle(t, b).LinkByName("ifb1")
	if err != nil {
		t.Fatal(err)
	}
	if err := testHandle(t, b).LinkSetUp(l); err != nil {
		t.Fatal(err)
	}
	if err := testHandle(t, b).LinkAddAltName(l, "ndst-altname-1"); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeDatagram")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(data)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The dump, one datagram per file.
	var m msg
	seq := b.c.nextSeq()
	off := m.begin(unix.RTM_GETLINK, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, seq)
	m.ifinfo(0)
	m.u32(unix.IFLA_EXT_MASK, rtextFilterSkipStats)
	m.end(off)
	if err := b.c.send(m.b); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		d, err := b.c.recvRaw(time.Now().Add(5 * time.Second))
		if err != nil {
			t.Fatal(err)
		}
		write(fmt.Sprintf("kernel-dump-%d", i), d)
		_, done, _, err := parseDumpChunk(d, seq, nil)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
	}
	// An extended acknowledgement: a create of an unknown kind.
	m.b = m.b[:0]
	seq = b.c.nextSeq()
	appendNewLink(&m, seq, "no-such-kind", "bad0", "", GroupOwned)
	if err := b.c.send(m.b); err != nil {
		t.Fatal(err)
	}
	d, err := b.c.recvRaw(time.Now().Add(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	write("kernel-extack", d)
	// And a plain acknowledgement (of a barrier, see conn.barrier).
	m.b = m.b[:0]
	seq = b.c.nextSeq()
	off = m.begin(unix.NLMSG_NOOP, unix.NLM_F_REQUEST|unix.NLM_F_ACK, seq)
	m.end(off)
	if err := b.c.send(m.b); err != nil {
		t.Fatal(err)
	}
	if d, err = b.c.recvRaw(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	write("kernel-ack", d)
}
