// Package osthread runs a function on an OS thread of its own that ends
// afterwards, for work that changes the thread itself (its network or
// mount namespace, with setns or unshare) and must never be seen by any
// other goroutine.
package osthread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// Throwaway runs fn on a locked OS thread that is not the process's main
// thread and that Go terminates afterwards (it is never unlocked), and
// returns fn's error. The main thread is avoided because Go cannot
// terminate it: it would stay in whatever namespace fn left it, and
// /proc/self (the main thread's view) would show that namespace as the
// process's.
func Throwaway(fn func() error) error {
	errc := make(chan error, 1)
	go run(errc, fn)
	return <-errc
}

func run(errc chan<- error, fn func() error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// Keep the main thread busy so the inner goroutine gets another.
		inner := make(chan error, 1)
		go run(inner, fn)
		errc <- <-inner
		runtime.UnlockOSThread()
		return
	}
	errc <- fn()
}
