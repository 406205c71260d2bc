package explain

import (
	"testing"

	"github.com/ndst-project/ndst/netdev"
)

func profile(t *testing.T, name string) netdev.Profile {
	t.Helper()
	p, ok := netdev.Profiles[name]
	if !ok {
		t.Fatalf("no line %s", name)
	}
	return p
}
