package kmsg

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestOpenRefusesWhatIsNotTheLog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("0,1,1,-;x\n"), 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(Path, link)
	for _, tc := range []struct{ path, want string }{
		{file, "is a regular file, not the kernel log device"},
		{fifo, "is a FIFO (named pipe), not the kernel log device"},
		{dir, "is a directory"},
		{link, "is a symbolic link"},
		{"/dev/null", "is character device 1:3, not the kernel log (1:11)"},
		{filepath.Join(dir, "missing"), "does not exist"},
	} {
		done := make(chan error, 1)
		go func() {
			r, err := Open(tc.path)
			if err == nil {
				r.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%s) error = %v, want %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) blocked", tc.path)
		}
	}
}

// TestReadFromTheEnd writes a line of its own into the kernel log (root
// only) and reads it back, and nothing logged before Open.
func TestReadFromTheEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("writing to and reading /dev/kmsg needs root")
	}
	r, err := Open(Path)
	if err != nil {
		t.Skipf("the kernel log is not readable here: %v", err)
	}
	defer r.Close()
	recs, err := r.Read(1000)
	if err != nil || len(recs) != 0 {
		t.Fatalf("Read() right after Open = %d records, %v; want none (Open seeks to the end)", len(recs), err)
	}
	msg := fmt.Sprintf("ndst kmsg test %d", os.Getpid())
	w, err := os.OpenFile(Path, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("cannot write to %s: %v", Path, err)
	}
	fmt.Fprintf(w, "<7>%s\n", msg)
	w.Close()
	var found bool
	for i := 0; i < 50 && !found; i++ {
		recs, err := r.Read(1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			found = found || strings.HasSuffix(rec.Text, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !found {
		t.Errorf("the line written to %s was not read back", Path)
	}
}
