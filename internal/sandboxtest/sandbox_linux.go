package sandboxtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
)

// script mounts the fresh /run and runs the test binary.
const script = `mount -t tmpfs -o mode=0755,size=256m ndst-test-sandbox /run && exec "$@"`

// reexec runs the test binary again in the sandbox and returns its exit
// status; ok is false when the tests are to run here.
func reexec() (code int, ok bool) {
	if In() || os.Geteuid() != 0 {
		return 0, false
	}
	// Pdeathsig is sent when the thread that started the child ends.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest: no unshare(1); the root tests run in the machine's /run")
		return 0, false
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest:", err)
		return 0, false
	}
	args := append([]string{"--mount", "--propagation", "private", "--fork", "--kill-child", "sh", "-c", script, "sh", self}, os.Args[1:]...)
	cmd := exec.Command(unshare, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), Env+"=private mount namespace, fresh /run")
	// The sandbox dies with this process (go test's kill after a
	// timeout), and the binary in it with the sandbox (--kill-child);
	// SIGINT and SIGTERM are passed on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "sandboxtest: the sandbox failed:", err)
		return 1, true
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, true
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode(), true
	}
	fmt.Fprintln(os.Stderr, "sandboxtest: the sandbox failed:", err)
	return 1, true
}
