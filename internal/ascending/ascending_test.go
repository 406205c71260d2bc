package ascending

import (
	"strconv"
	"strings"
	"testing"
)

func ns(v int64) string { return strconv.FormatInt(v, 10) + " ns" }

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		vs     []int64
		loOpen bool
		want   string
	}{
		{nil, true, ""},
		{[]int64{0, 0, 5, 10}, false, ""},
		{[]int64{0, 5}, true, "value 0 is 0 ns: want above 0 ns and at most 10 ns"},
		{[]int64{-1}, false, "value 0 is -1 ns: want at least 0 ns"},
		{[]int64{1, 11}, false, "value 1 is 11 ns: want at least 0 ns and at most 10 ns"},
		{[]int64{1, 5, 4}, false, "value 2 is 4 ns, below the one before it (5 ns)"},
	} {
		err := Check(c.vs, 0, 10, c.loOpen, "value", ns)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.vs, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want %q", c.vs, err, c.want)
		}
	}
}
