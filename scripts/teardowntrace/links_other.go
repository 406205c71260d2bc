//go:build !linux

package main

import (
	"fmt"
	"os"
)

func linksMain([]string) int {
	fmt.Fprintln(os.Stderr, "teardowntrace links: needs Linux (rtnetlink)")
	return 1
}
