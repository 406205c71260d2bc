package statefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestDefaultPath(t *testing.T) {
	tests := []struct {
		name, xdg, home, want string
	}{
		{"xdg set", "/xdg/state", "/home/u", "/xdg/state/ndst/state"},
		{"xdg unset", "", "/home/u", "/home/u/.local/state/ndst/state"},
		{"xdg relative is ignored", "rel/state", "/home/u", "/home/u/.local/state/ndst/state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			if got, err := DefaultPath(); got != tt.want || err != nil {
				t.Errorf("DefaultPath() with XDG_STATE_HOME=%q HOME=%q = %q, %v; want %q, nil", tt.xdg, tt.home, got, err, tt.want)
			}
		})
	}
	t.Run("no home", func(t *testing.T) {
		t.Setenv("XDG_STATE_HOME", "")
		t.Setenv("HOME", "")
		if got, err := DefaultPath(); err == nil || !strings.Contains(err.Error(), "--state") {
			t.Errorf("DefaultPath() without HOME = %q, %v; want an error suggesting --state", got, err)
		}
	})
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no", "such", "state")
	st, err := Load(path)
	if err != nil || st == nil || st.NextIfindex != 0 || len(st.Devices) != 0 {
		t.Fatalf("Load(missing) = %+v, %v; want empty State, nil", st, err)
	}
}

func TestSaveLoad(t *testing.T) {
	defer setUmask(0)() // the most permissive umask: the mode must still be 0600
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "state")
	for _, st := range []*State{manyDevices(3), {}, manyDevices(1000)} {
		if err := Save(path, st); err != nil {
			t.Fatalf("Save(%s) error = %v, want nil", path, err)
		}
		got, err := Load(path)
		if err != nil || !equalState(got, st) {
			t.Fatalf("Load(Save(%d devices)) = %d devices, %v; want equal state, nil", len(st.Devices), len(got.Devices), err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode() != 0o600 {
			t.Errorf("Stat(%s) mode = %v, %v; want -rw-------", path, fi.Mode(), err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode() != os.ModeDir|0o700 {
		t.Errorf("Stat(%s) = %v, %v; want a directory created with mode 0700", dir, fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("ReadDir(%s) = %v, want only the state file (no temporary files)", dir, ents)
	}
}

// TestSaveFixesMode: a state file that somehow became world-readable is
// replaced by one with mode 0600.
func TestSaveFixesMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Save(path, manyDevices(2)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("Stat(%s) after Save = %v, %v; want -rw-------", path, fi.Mode(), err)
	}
}

// TestSaveInvalidChangesNothing: a State that breaks the invariants is
// refused and the file on disk keeps its bytes.
func TestSaveInvalidChangesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if err := Save(path, manyDevices(5)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := manyDevices(5)
	bad.Devices[3].Name = bad.Devices[1].Name
	err := Save(path, bad)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Save(%s, duplicate names) = %v; want ErrInvalid naming the path", path, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("state file changed after a refused Save")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("ReadDir after a refused Save = %v, want only the state file", ents)
	}
}

// TestLoadCorrupt writes every corruption class to a file: Load names the
// path, suggests the fix, wraps the right error, and leaves the file alone.
func TestLoadCorrupt(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range corruptCases() {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			st, err := Load(path)
			var fe *FormatError
			if !errors.Is(err, tt.kind) || !errors.As(err, &fe) || fe.Path != path {
				t.Fatalf("Load(%s) = %+v, %v; want *FormatError for %s wrapping %v", tt.name, st, err, path, tt.kind)
			}
			msg := err.Error()
			wants := []string{"state file " + path + " ", "ndst --state " + path + " reset"}
			if tt.kind == ErrForeign {
				// Not ndst's: never suggest removing it.
				wants = []string{path + " is not an ndst state file", "pass --state a new path"}
				if strings.Contains(msg, "reset") {
					t.Errorf("Load(%s) error = %q suggests a reset for a file that is not ndst's", tt.name, msg)
				}
			}
			for _, want := range wants {
				if !strings.Contains(msg, want) {
					t.Errorf("Load(%s) error = %q, want it to contain %q", tt.name, msg, want)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, tt.data) {
				t.Errorf("Load(%s) changed the file", tt.name)
			}
		})
	}
	t.Run("message", func(t *testing.T) {
		b := validSample()
		b[len(b)-1] ^= 1
		path := filepath.Join(dir, "x")
		os.WriteFile(path, b, 0o600)
		_, err := Load(path)
		want := "state file " + path + " is corrupt (checksum mismatch: stored "
		fix := "); move it away or run 'ndst --state " + path + " reset'"
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), fix) {
			t.Errorf("Load(bit flip) error = %q, want %q...%s", err, want, fix)
		}
	})
}

// TestLoadHugeFiles: sparse files of gigabytes are refused from their
// header, without reading or allocating their size.
func TestLoadHugeFiles(t *testing.T) {
	dir := t.TempDir()
	announced := func(n uint32) []byte {
		h := validSample()[:headerSize]
		binary.LittleEndian.PutUint32(h[8:], n)
		return h
	}
	tests := []struct {
		name   string
		header []byte
		size   int64
		want   string
	}{
		{"zeros", nil, 3 << 30, "does not begin with"},
		{"header announces small body", validSample()[:headerSize], 3 << 30, "trailing garbage"},
		{"header announces huge body", announced(0xFFFFFFF0), 0xFFFFFFF0 + headerSize, "limit"},
		{"short of a huge body", announced(0xFFFFFFF0), 1 << 20, "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tt.header)
			if err := f.Truncate(tt.size); err != nil {
				f.Close()
				t.Skipf("cannot make a sparse file of %d bytes here: %v", tt.size, err)
			}
			f.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err = Load(path)
			runtime.ReadMemStats(&after)
			if !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrForeign)) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load(%s) error = %v, want ErrCorrupt or ErrForeign containing %q", tt.name, err, tt.want)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
				t.Errorf("Load(%s) allocated %d bytes, want <= 1 MiB", tt.name, got)
			}
		})
	}
}

// TestSaveInterruptedBeforeRename kills a real process inside Save, after
// the temporary file is complete but before the rename: the old state must
// be intact, and the next Save sweeps the leftover.
func TestSaveInterruptedBeforeRename(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	old := manyDevices(7)
	if err := Save(path, old); err != nil {
		t.Fatal(err)
	}
	oldBytes, _ := os.ReadFile(path)

	err := helper(t, "crash-save", path).Run()
	var ee interface{ Sys() any }
	if !errors.As(err, &ee) {
		t.Fatalf("crash-save helper = %v, want it killed", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("crash-save helper = %v, want it killed by SIGKILL", err)
	}

	if b, _ := os.ReadFile(path); !bytes.Equal(b, oldBytes) {
		t.Fatalf("state file changed by a Save killed before its rename")
	}
	got, err := Load(path)
	if err != nil || !equalState(got, old) {
		t.Fatalf("Load after interrupted Save = %d devices, %v; want the old %d devices", len(got.Devices), err, len(old.Devices))
	}
	leftovers, _ := filepath.Glob(path + ".tmp-*")
	if len(leftovers) != 1 {
		t.Fatalf("temporary files after the crash = %v, want exactly one", leftovers)
	}
	if err := Save(path, manyDevices(8)); err != nil {
		t.Fatal(err)
	}
	if leftovers, _ := filepath.Glob(path + ".tmp-*"); len(leftovers) != 0 {
		t.Errorf("temporary files after the next Save = %v, want none", leftovers)
	}
}
