//go:build linux

package statefile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// checkReadOnlyOutput checks the "readonly" helper's report: nothing locked
// and why, the state read, the save refused with a clear reason.
func checkReadOnlyOutput(t *testing.T, out []byte, err error, why string) {
	t.Helper()
	s := string(out)
	if err != nil {
		t.Fatalf("readonly helper = %v; output %q", err, s)
	}
	for _, want := range []string{"readonly: cannot create lock file", why, "loaded 3", "save: cannot write state file", "its directory takes no new files"} {
		if !strings.Contains(s, want) {
			t.Errorf("readonly helper said %q, want it to contain %q", s, want)
		}
	}
}

// readOnlyState makes a directory holding a 3-device state file and no lock
// file, readable by everyone.
func readOnlyState(t *testing.T) (dir, path string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ndst-statefile-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.RemoveAll(dir) })
	path = filepath.Join(dir, "state")
	if err := Save(path, manyDevices(3)); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, 0o644)
	os.Chmod(dir, 0o755)
	return dir, path
}

// TestReadOnlyFileSystem: on a read-only mount, Lock holds nothing and says
// why, Load reads the state, Save fails saying why. Needs root (a private
// mount namespace with a read-only bind mount).
func TestReadOnlyFileSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a read-only bind mount in a private mount namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1)")
	}
	dir, path := readOnlyState(t)
	cmd := helper(t, "readonly", path)
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"`
	cmd.Args = append([]string{"unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", dir}, cmd.Args...)
	cmd.Path, _ = exec.LookPath("unshare")
	cmd.Stderr = nil
	out, err := cmd.CombinedOutput()
	checkReadOnlyOutput(t, out, err, "read-only file system")
	if _, err := os.Lstat(path + ".lock"); !os.IsNotExist(err) {
		t.Errorf("a lock file appeared under the read-only mount: %v", err)
	}
}

// TestUnprivilegedReader: a user who may read the state but not write its
// directory can list (Load) without a lock file, and Save says why it
// cannot. As root the helper runs as nobody; otherwise the directory is
// made read-only for this user.
func TestUnprivilegedReader(t *testing.T) {
	dir, path := readOnlyState(t)
	if os.Geteuid() != 0 {
		os.Chmod(dir, 0o555)
		out, err := helper(t, "readonly", path).CombinedOutput()
		checkReadOnlyOutput(t, out, err, "permission denied")
		return
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv(1) to run as nobody")
	}
	// nobody must be able to run the test binary: copy it where it can.
	bin := filepath.Join(dir, "statefile.test")
	b, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := helper(t, "readonly", path)
	cmd.Path = setpriv
	cmd.Args = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^$"}
	cmd.Stderr = nil
	out, err := cmd.CombinedOutput()
	checkReadOnlyOutput(t, out, err, "permission denied")
}
