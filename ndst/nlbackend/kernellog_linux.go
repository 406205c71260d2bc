package nlbackend

import (
	"fmt"
	"strings"

	"github.com/ndst-project/ndst/ndst"
	"github.com/ndst-project/ndst/ndst/nlbackend/kmsg"
)

// kernelLog keeps what the kernel logs about teardown during one command
// (package kmsg): its lines, and the devices it says it waits for.
type kernelLog struct {
	b       *Backend
	res     *ndst.Result
	r       *kmsg.Reader
	lines   []string
	dropped int
	// usage is the last usage count the kernel printed per device, names
	// the devices in the order it first named them, nwait its lines.
	usage map[string]int
	names []string
	nwait int
}

// openKernelLog starts reading the kernel log at its end; an unreadable
// log is one note in res, never a failure.
func (b *Backend) openKernelLog(res *ndst.Result) kernelLog {
	k := kernelLog{b: b, res: res, usage: map[string]int{}}
	r, err := kmsg.Open(kmsgPath)
	if err != nil {
		b.notef(res, "kernel log not read (%v): its lines about this teardown are not attached", err)
	} else {
		k.r = r
	}
	return k
}

// read takes what the kernel logged since the last read.
func (k *kernelLog) read() {
	if k.r == nil {
		return
	}
	recs, err := k.r.Read(kmsgBatch)
	for _, r := range recs {
		if !kmsg.Teardown(r.Text) {
			continue
		}
		if name, n, ok := kmsg.Waiting(r.Text); ok {
			k.nwait++
			if _, seen := k.usage[name]; !seen {
				k.names = append(k.names, name)
			}
			k.usage[name] = n
		}
		for _, l := range r.Lines() {
			if len(k.lines) < maxKernelLines {
				k.lines = append(k.lines, l)
			} else {
				k.dropped++
			}
		}
	}
	if err != nil {
		k.b.notef(k.res, "kernel log: %v; stopped reading it", err)
		k.r.Close()
		k.r = nil
	}
}

// attach reads the last lines and puts them in res.
func (k *kernelLog) attach(res *ndst.Result) {
	k.read()
	res.KernelLog = append(res.KernelLog, k.lines...)
	if k.dropped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("kernel log: %d more lines about teardown not attached (the first %d are)", k.dropped, maxKernelLines))
	}
	if k.r != nil && k.r.Lost > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("kernel log: %d records were overwritten before ndst read them", k.r.Lost))
	}
}

// stuckDevices lists the devices the kernel said it waits for.
func (k *kernelLog) stuckDevices() []ndst.StuckDevice {
	var out []ndst.StuckDevice
	for _, n := range k.names {
		out = append(out, ndst.StuckDevice{Name: n, UsageCount: k.usage[n]})
	}
	return out
}

// named says which devices the kernel waits for, or that it has not said.
func (k *kernelLog) named() string {
	if len(k.names) == 0 {
		return "the kernel has not named the device yet (it does after net.core.netdev_unregister_timeout_secs)"
	}
	return "the kernel waits for " + strings.Join(k.names, ", ")
}

func (k *kernelLog) close() {
	if k.r != nil {
		k.r.Close()
		k.r = nil
	}
}
