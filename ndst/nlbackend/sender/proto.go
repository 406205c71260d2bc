package sender

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// Ops a sender performs.
const (
	// OpNetlink sends Data, one rtnetlink request asking for an
	// acknowledgement (NLM_F_ACK) with sequence number Seq, on the netlink
	// socket File, and replies with that acknowledgement's errno and
	// extended message.
	OpNetlink uint8 = 1
	// OpLinkDel deletes link Ifindex with github.com/vishvananda/netlink
	// (like `ip link del`) in the network namespace File.
	OpLinkDel uint8 = 2
	// OpWrite writes Data at offset 0 of File (one write to a /proc/sys
	// file of the ndst module).
	OpWrite uint8 = 3
)

// Request is one request for the sender.
type Request struct {
	Op      uint8
	File    int // index into the files given to Start
	Ifindex int32
	Seq     uint32
	Data    []byte
}

// Reply is the sender's answer to one Request.
type Reply struct {
	Errno syscall.Errno // 0: the request succeeded
	// Msg is the kernel's extended acknowledgement, or what failed in the
	// sender itself.
	Msg string
	// T0 and T1 are the sender's CLOCK_MONOTONIC, in ns, right before
	// and after the request; CPU0 and CPU1 its CPU clock (Sender.CPUClock)
	// at those instants.
	T0, T1, CPU0, CPU1 int64
}

// Err is the reply as an error: nil, the errno, or the errno with the
// kernel's message.
func (r Reply) Err() error {
	switch {
	case r.Errno == 0 && r.Msg == "":
		return nil
	case r.Errno == 0:
		return errors.New(r.Msg)
	case r.Msg == "":
		return r.Errno
	}
	return &KernelError{Errno: r.Errno, Msg: r.Msg}
}

// KernelError is an errno with the kernel's extended-ack message.
type KernelError struct {
	Errno syscall.Errno
	Msg   string
}

func (e *KernelError) Error() string { return e.Errno.Error() + ": " + e.Msg }

// Unwrap returns the errno.
func (e *KernelError) Unwrap() error { return e.Errno }

// hello is the sender's first frame.
type hello struct {
	PID, TID int32
	Child    bool
}

var le = binary.LittleEndian

// maxFrame bounds a frame: a request is one netlink message or one line.
const maxFrame = 1 << 20

func writeFrame(w io.Writer, payload []byte) error {
	b := make([]byte, 4+len(payload))
	le.PutUint32(b, uint32(len(payload)))
	copy(b[4:], payload)
	_, err := w.Write(b)
	return err
}

func readFrame(r io.Reader) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := le.Uint32(h[:])
	if n > maxFrame {
		return nil, fmt.Errorf("sender: frame of %d bytes (at most %d)", n, maxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

func (q Request) encode() []byte {
	b := make([]byte, 12, 12+len(q.Data))
	b[0] = q.Op
	le.PutUint16(b[2:], uint16(q.File))
	le.PutUint32(b[4:], uint32(q.Ifindex))
	le.PutUint32(b[8:], q.Seq)
	return append(b, q.Data...)
}

func decodeRequest(b []byte) (Request, error) {
	if len(b) < 12 {
		return Request{}, fmt.Errorf("sender: short request (%d bytes)", len(b))
	}
	return Request{Op: b[0], File: int(le.Uint16(b[2:])), Ifindex: int32(le.Uint32(b[4:])), Seq: le.Uint32(b[8:]), Data: b[12:]}, nil
}

func (r Reply) encode() []byte {
	b := make([]byte, 36, 36+len(r.Msg))
	le.PutUint32(b, uint32(r.Errno))
	le.PutUint64(b[4:], uint64(r.T0))
	le.PutUint64(b[12:], uint64(r.T1))
	le.PutUint64(b[20:], uint64(r.CPU0))
	le.PutUint64(b[28:], uint64(r.CPU1))
	return append(b, r.Msg...)
}

func decodeReply(b []byte) (Reply, error) {
	if len(b) < 36 {
		return Reply{}, fmt.Errorf("sender: short reply (%d bytes)", len(b))
	}
	return Reply{
		Errno: syscall.Errno(le.Uint32(b)),
		T0:    int64(le.Uint64(b[4:])), T1: int64(le.Uint64(b[12:])),
		CPU0: int64(le.Uint64(b[20:])), CPU1: int64(le.Uint64(b[28:])),
		Msg: string(b[36:]),
	}, nil
}

func (h hello) encode() []byte {
	b := make([]byte, 9)
	le.PutUint32(b, uint32(h.PID))
	le.PutUint32(b[4:], uint32(h.TID))
	if h.Child {
		b[8] = 1
	}
	return b
}

func decodeHello(b []byte) (hello, error) {
	if len(b) != 9 {
		return hello{}, fmt.Errorf("sender: bad hello (%d bytes)", len(b))
	}
	return hello{PID: int32(le.Uint32(b)), TID: int32(le.Uint32(b[4:])), Child: b[8] == 1}, nil
}
