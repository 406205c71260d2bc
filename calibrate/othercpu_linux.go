package calibrate

import (
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc/stat's times (USER_HZ, 100 on every Linux
// architecture ndst builds for).
const userHZ = 100

// sampleCPU reads /proc/stat's first line (user, nice, system, idle,
// iowait, irq, softirq, steal; guest time is within user) and this
// process's rusage, itself and its waited-for children.
func sampleCPU() cpuSample {
	s := cpuSample{at: time.Now()}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s
	}
	line, rest, _ := strings.Cut(string(b), "\n")
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			s.cpus++
		}
	}
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return s
	}
	var busy, steal int64
	for i, v := range f[1:9] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s
		}
		busy += n
		if i == 7 {
			steal = n
		}
	}
	var self, children unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &self) != nil || unix.Getrusage(unix.RUSAGE_CHILDREN, &children) != nil {
		return s
	}
	tv := func(t unix.Timeval) time.Duration { return time.Duration(t.Nano()) }
	s.busy = time.Duration(busy) * time.Second / userHZ
	s.steal = time.Duration(steal) * time.Second / userHZ
	s.own = tv(self.Utime) + tv(self.Stime) + tv(children.Utime) + tv(children.Stime)
	s.ok = true
	return s
}
