package main

import (
	"errors"
	"os/exec"
)

// exitOf is the exit status of a finished command (-1 when it did not run).
func exitOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
