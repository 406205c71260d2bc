package modbackend

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/ndst-project/ndst/ndst"
)

// TestOpenWithoutModule checks that, on a kernel without the module, Open
// says how to load it and creates no namespace. (The module's behaviour is
// tested in the VM rig: vmrig's TestVMModule.)
func TestOpenWithoutModule(t *testing.T) {
	if Loaded() == nil {
		t.Skip("the ndst module is loaded on this kernel")
	}
	name := "ndst-kmod-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	_, err := Open(context.Background(), Options{Netns: name})
	if err == nil || !strings.Contains(err.Error(), "not loaded") || !strings.Contains(err.Error(), "insmod") {
		t.Errorf("Open() error = %v, want one saying the module is not loaded and how to load it", err)
	}
	if _, err := os.Stat("/run/netns/" + name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Open: /run/netns/%s exists (stat error %v), want no namespace created", name, err)
	}
}

func TestOpenBadNetns(t *testing.T) {
	_, err := Open(context.Background(), Options{Netns: "../etc"})
	if !ndst.IsUsage(err) {
		t.Errorf("Open(netns ../etc) error = %v, want a usage error", err)
	}
}
