package nlbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ndst-project/ndst/safefile"
	"golang.org/x/sys/unix"
)

// Which namespaces under /run/netns are ndst's (ndst netns): one whose
// name has a file in ownerDir that holds the identity (nsfs device and
// inode) of the namespace mounted at that name. ndst writes the file before
// it mounts the namespace and removes it after unmounting, so a namespace
// someone else mounts under a name ndst once used, or one an interrupted
// ndst did not finish mounting, is never taken for ndst's: a namespace ndst
// did not create is never deleted. The files live in /run, like the
// namespaces, and go with them at reboot.

// ownerDir holds the ownership files; tests point it elsewhere.
var ownerDir = "/run/ndst/netns"

// ownerPath is the ownership file of a namespace name.
func ownerPath(name string) string { return filepath.Join(ownerDir, name) }

// writeOwner records that the namespace with identity id, about to be
// mounted at name, is ndst's.
func writeOwner(name string, id nsID) error {
	if err := os.MkdirAll(ownerDir, 0o755); err != nil {
		return err
	}
	return safefile.WriteOutput(ownerPath(name), 0o644, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%d %d\n", id.dev, id.ino)
		return err
	}, nil)
}

// readOwner returns the identity recorded for name (ok false when none).
func readOwner(name string) (nsID, bool) {
	b, err := safefile.ReadFile(context.Background(), ownerPath(name), 64, safefile.NoLinks)
	if err != nil {
		return nsID{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return nsID{}, false
	}
	dev, err1 := strconv.ParseUint(f[0], 10, 64)
	ino, err2 := strconv.ParseUint(f[1], 10, 64)
	return nsID{dev, ino}, err1 == nil && err2 == nil
}

// removeOwner forgets name's ownership file.
func removeOwner(name string) {
	_ = os.Remove(ownerPath(name))
}

// namespace is one entry of /run/netns.
type namespace struct {
	Name string
	ID   nsID // zero when it is not a mounted network namespace
	Ours bool
}

// scanNetns lists /run/netns: every entry, with its identity and whether
// it is ndst's.
func scanNetns() ([]namespace, error) {
	ents, err := os.ReadDir(netnsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]namespace, 0, len(ents))
	for _, e := range ents {
		n := namespace{Name: e.Name()}
		if id, ok := mountedNetns(nsPath(n.Name)); ok {
			n.ID = id
			own, ok := readOwner(n.Name)
			n.Ours = ok && own == id
		}
		out = append(out, n)
	}
	return out, nil
}

// mountedNetns returns the identity of the network namespace mounted at
// path: stat without opening (a FIFO planted there cannot block), and the
// nsfs magic checked on the path's file system.
func mountedNetns(path string) (nsID, bool) {
	var sfs unix.Statfs_t
	if unix.Statfs(path, &sfs) != nil || sfs.Type != unix.NSFS_MAGIC {
		return nsID{}, false
	}
	id, err := statID(path)
	return id, err == nil
}
