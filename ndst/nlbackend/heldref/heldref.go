// Package heldref holds a genuine reference to a network device on a stock
// Linux kernel, for as long as asked, so that ndst's leak diagnosis can be
// tested against the kernel's own behaviour: the device's unregister waits
// in netdev_wait_allrefs and the kernel prints "unregister_netdevice:
// waiting for NAME to become free. Usage count = N".
//
// The reference is the one an AF_PACKET send takes: packet_snd() looks the
// device up (dev_get_by_index, one reference) before it copies the payload
// from user memory, and drops it when the send ends. The payload lies on a
// page registered with userfaultfd that nobody fills, so the copy waits in
// the page fault, with the reference held, until Release, the hold's
// duration, or the process's exit. Release unmaps the page before waking the
// sender, so the send fails (EFAULT) instead of transmitting to a device
// that is going away.
//
// Invariants: a Hold is bounded (MaxHold at most, and never past the
// process); it only sends on the device it was given, in the namespace it was
// given, and transmits nothing. It needs what userfaultfd needs for faults
// taken inside the kernel (CAP_SYS_PTRACE, as root has, or
// vm.unprivileged_userfaultfd=1) and CAP_NET_RAW.
package heldref

import "time"

// MaxHold bounds a hold, as the ndst module bounds its own.
const MaxHold = 10 * time.Minute
