package pseudofs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func resetCache() {
	cache.Lock()
	cache.files, cache.src, cache.err = nil, nil, nil
	cache.Unlock()
}

// TestTracefsLeavesHostAlone reads a tracepoint's id as root, from the host's
// tracefs or a private mount, and checks that the host's mounts are exactly
// as they were.
func TestTracefsLeavesHostAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a private mount of tracefs needs root")
	}
	resetCache()
	defer resetCache()
	before, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	hostHad := HostMount(Tracefs)
	files, src, err := Read(Tracefs, "events/workqueue/workqueue_execute_start/id", "events/no_such_system/x/id")
	if err != nil {
		t.Fatalf("Read(tracefs) = %v", err)
	}
	if len(files["events/workqueue/workqueue_execute_start/id"]) == 0 {
		t.Errorf("no id for workqueue_execute_start (files %v)", files)
	}
	if _, ok := files["events/no_such_system/x/id"]; ok {
		t.Errorf("a missing file was read")
	}
	if hostHad == "" && !strings.Contains(src, "private mount") {
		t.Errorf("source %q: the host has no tracefs, so it must be a private mount", src)
	}
	after, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("the host's mounts changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Read again: from the cache, with no new mount.
	if _, src2, err := Read(Tracefs, "events/workqueue/workqueue_execute_start/id"); err != nil || src2 != src {
		t.Errorf("second Read = %q, %v; want %q from the cache", src2, err, src)
	}
}

// TestNoSuchFS: a kernel without the file system says so, and a file system
// that cannot be had stays unavailable for the process.
func TestNoSuchFS(t *testing.T) {
	resetCache()
	defer resetCache()
	defer func(f string) { filesystemsFile = f }(filesystemsFile)
	filesystemsFile = filepath.Join(t.TempDir(), "filesystems")
	if err := os.WriteFile(filesystemsFile, []byte("nodev\tsysfs\nnodev\tproc\n\text4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := &FS{Type: "nosuchfs", Mounts: []string{filepath.Join(t.TempDir(), "m")}, Magic: 0x1234}
	_, _, err := Read(fs, "x")
	var u *Unavailable
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "this kernel has no nosuchfs") {
		t.Fatalf("Read(nosuchfs) = %v, want Unavailable naming the kernel", err)
	}
	if _, _, err2 := Read(fs, "y"); err2 == nil {
		t.Errorf("a second Read of an unavailable file system succeeded")
	}
}

func TestReadRefusesPathsOutside(t *testing.T) {
	if _, err := readAll(t.TempDir(), Tracefs, []string{"../etc/passwd"}); err == nil {
		t.Errorf("a path outside the file system was read")
	}
}
