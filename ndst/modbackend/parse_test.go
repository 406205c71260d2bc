package modbackend

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseLast(t *testing.T) {
	tests := []struct {
		in   string
		want Last
	}{
		{"seq=0 op=none\n", Last{Op: "none"}},
		{"seq=7 op=del count=999 skipped=1 ns=12003456789 err=0\n",
			Last{Seq: 7, Op: "del", Count: 999, Skipped: 1, Kernel: 12003456789}},
		{"seq=2 op=add count=3 skipped=0 ns=5 err=-4\n", Last{Seq: 2, Op: "add", Count: 3, Kernel: 5, Errno: 4}},
		{"seq=3 op=del_batch count=2 skipped=0 ns=9 err=0 future=1", Last{Seq: 3, Op: "del_batch", Count: 2, Kernel: 9}},
	}
	for _, tc := range tests {
		got, err := ParseLast(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseLast(%q) = %+v, %v; want %+v, nil", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", "\n", "seq=1\n", "op=add count=1 ns=1\n", "seq=1 op=add\n", "seq=x op=none\n",
		"seq=1 op=add count=-1 ns=1\n", "seq=1 op=add count=1 ns=1\nseq=2 op=add count=1 ns=1\n",
		"seq=1 seq=2 op=none", "seq=1 op=add count=1 ns=1 junk",
	} {
		if got, err := ParseLast(in); err == nil {
			t.Errorf("ParseLast(%q) = %+v, nil; want an error", in, got)
		}
	}
}

func TestParseDevices(t *testing.T) {
	got, err := ParseDevices("2 ndst0 8\n3 dummy1 9\n")
	want := []ModDevice{{2, "ndst0", 8}, {3, "dummy1", 9}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDevices = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ParseDevices(""); err != nil || got != nil {
		t.Errorf("ParseDevices(empty) = %+v, %v; want nil, nil", got, err)
	}
	for _, in := range []string{"2 ndst0\n", "x ndst0 8\n", "0 ndst0 8\n", "2 ndst0 8 extra\n", "2 ndst0 8\n\n"} {
		if _, err := ParseDevices(in); err == nil {
			t.Errorf("ParseDevices(%q) error = nil, want one", in)
		}
	}
}

func TestParseSamples(t *testing.T) {
	got, err := ParseSamples("2309391\n791460\n")
	if err != nil || !reflect.DeepEqual(got, []int64{2309391, 791460}) {
		t.Errorf("ParseSamples = %v, %v", got, err)
	}
	if got, err := ParseSamples(""); err != nil || len(got) != 0 {
		t.Errorf("ParseSamples(empty) = %v, %v; want none", got, err)
	}
	for _, in := range []string{"1\nx\n", "-5\n", "1 2\n"} {
		if _, err := ParseSamples(in); err == nil {
			t.Errorf("ParseSamples(%q) error = nil, want one", in)
		}
	}
}

func TestParseHolds(t *testing.T) {
	got, err := ParseHolds("3 ndst1 196\n")
	want := []HoldInfo{{3, "ndst1", 196 * time.Millisecond}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseHolds = %+v, %v; want %+v", got, err, want)
	}
	for _, in := range []string{"3 ndst1\n", "3 ndst1 -1\n", "a b c\n"} {
		if _, err := ParseHolds(in); err == nil {
			t.Errorf("ParseHolds(%q) error = nil, want one", in)
		}
	}
}

// FuzzParseLast checks that ParseLast never panics and that what it
// accepts has an op and sane numbers.
func FuzzParseLast(f *testing.F) {
	f.Add("seq=7 op=del count=999 skipped=1 ns=12003456789 err=0\n")
	f.Add("seq=0 op=none\n")
	f.Fuzz(func(t *testing.T, in string) {
		l, err := ParseLast(in)
		if err != nil {
			return
		}
		if l.Op == "" || l.Count < 0 || l.Skipped < 0 || l.Kernel < 0 || strings.Contains(in, "\n") && !strings.HasSuffix(in, "\n") {
			t.Errorf("ParseLast(%q) = %+v: accepted something odd", in, l)
		}
	})
}
