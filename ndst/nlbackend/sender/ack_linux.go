package sender

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseAck decodes the body of an NLMSG_ERROR message with header flags
// flags: errno 0 for an acknowledgement, else the errno and the kernel's
// extended message when it sent one (NETLINK_EXT_ACK).
func ParseAck(flags uint16, data []byte) (syscall.Errno, string, error) {
	if len(data) < 4 {
		return 0, "", fmt.Errorf("short netlink error message")
	}
	ne := binary.NativeEndian
	errno := syscall.Errno(-int32(ne.Uint32(data[:4])))
	if errno == 0 || flags&unix.NLM_F_ACK_TLVS == 0 || len(data) < 4+unix.SizeofNlMsghdr {
		return errno, "", nil
	}
	// With NETLINK_CAP_ACK the request is echoed by its header only.
	off := 4 + unix.SizeofNlMsghdr
	if flags&unix.NLM_F_CAPPED == 0 {
		off = 4 + (int(ne.Uint32(data[4:]))+3)&^3
	}
	msg := ""
	for b := data[min(off, len(data)):]; len(b) >= unix.SizeofRtAttr; {
		l := int(ne.Uint16(b))
		if l < unix.SizeofRtAttr || l > len(b) {
			break
		}
		if ne.Uint16(b[2:])&^uint16(unix.NLA_F_NESTED|unix.NLA_F_NET_BYTEORDER) == unix.NLMSGERR_ATTR_MSG {
			msg = unix.ByteSliceToString(b[unix.SizeofRtAttr:l])
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return errno, msg, nil
}
