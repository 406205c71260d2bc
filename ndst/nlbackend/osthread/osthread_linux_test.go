package osthread

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNeverTheMainThread: fn runs on a thread other than the main one, even
// when called from the main goroutine's thread.
func TestNeverTheMainThread(t *testing.T) {
	for range 20 {
		var tid int
		if err := Throwaway(func() error { tid = unix.Gettid(); return nil }); err != nil {
			t.Fatal(err)
		}
		if tid == os.Getpid() {
			t.Fatalf("fn ran on the main thread")
		}
	}
}
