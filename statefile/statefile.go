// Package statefile persists the emulated backend's device registry between
// CLI invocations: one small binary file, written atomically, read with full
// validation, and guarded by an advisory lock held for a whole command.
//
// # Format (versions 1 and 2)
//
// All integers are little-endian; "uvarint" is the canonical (shortest)
// unsigned LEB128 encoding of encoding/binary.
//
//	offset  size  field
//	0       6     magic "NDSTSF"
//	6       2     format version (1 or 2)
//	8       4     body length in bytes
//	12      4     CRC-32C (Castagnoli) of bytes 0..11 followed by the body
//	16      ...   body:
//	                NextIfindex  uint32 (0 <= value <= 2^31-1)
//	                count        uint32
//	                count entries, each:
//	                  ifindex delta  uvarint (ifindex minus the previous
//	                                 entry's ifindex, or minus 0 for the
//	                                 first; always >= 1)
//	                  flags          uvarint (< 2^32)
//	                  name length    1 byte (1..15)
//	                  name           that many bytes
//
// Version 2 (network namespaces) continues the body with:
//
//	namespace count  uvarint
//	per namespace, in strictly ascending byte order of name:
//	  name length    1 byte (1..64)
//	  name           that many bytes (see NetnsNameProblem)
//	  NextIfindex    uvarint (<= 2^31-1)
//	  flags          uvarint (< 2^32)
//	  device count   uvarint
//	  the devices, encoded as the entries above
//	pair count       uvarint
//	per veth pair, in strictly ascending order of its A end:
//	  A namespace    uvarint (0: the initial namespace; i: the i-th above)
//	  A ifindex      uvarint
//	  B namespace, B ifindex, likewise; A sorts before B by (namespace,
//	                 ifindex), every end is a device of its namespace and
//	                 belongs to one pair only
//
// A State with no namespaces and no pairs is always written as version 1,
// byte for byte what ndst wrote before namespaces existed, so those files
// stay readable by older ndst; a version 2 file with neither is therefore
// refused as non-canonical. Version 1 files load as a State with no
// namespaces.
//
// A device named like "dummy123456" costs 14 bytes, so a registry of 10^6
// devices is about 14 MB; both directions are single linear passes.
//
// # Invariants
//
//   - Decode accepts exactly the byte strings Encode produces: for every
//     input Decode accepts, Encode of the result reproduces the input byte for
//     byte. Anything else is an error wrapping ErrCorrupt (damage) or
//     ErrVersion (a format this code does not read); nothing is ever silently
//     reset or repaired. Bytes that do not begin with the magic wrap
//     ErrForeign instead: they are not ndst's.
//   - A valid State has 0 <= NextIfindex <= 2^31-1, devices in strictly
//     ascending ifindex order with 1 <= ifindex <= 2^31-1, and unique names
//     that the kernel would accept (1..15 bytes, not "." or "..", no '/',
//     ':', whitespace, control bytes or DEL); likewise in every namespace,
//     whose names are unique and valid (NetnsNameProblem); and veth pairs
//     whose ends exist. Encode and Save refuse an
//     invalid State with an error wrapping ErrInvalid, so nothing is written
//     that Load would reject.
//   - Decode never allocates more than a small multiple of its input (about
//     10 bytes per input byte at worst): counts are checked against the bytes
//     actually present before any allocation, and Load reads a header before
//     the rest, so a huge file of garbage costs nothing.
//   - No step is worse than linear. Duplicate names are found with a bitmap
//     over the numbers of template names (dummy0, dummy1, ...) and, for any
//     other names, with hashes filed into cache-sized partitions; see
//     nameSet and dupFinder.
//   - Save never leaves a partly written file at path: the new content goes
//     to a temporary file in the same directory, which is synced, renamed
//     over path, and the directory synced. The file's mode is 0600.
//   - Lock serialises whole read-modify-write commands between processes with
//     flock(2) (LockFileEx on Windows) on the sidecar path+".lock", which
//     records the holder's PID. The kernel drops the lock when its holder
//     dies, so a lock file left by a dead process never blocks.
//   - ndst touches only its own files. A state path must be missing or a
//     regular file that begins like an ndst state file (or is empty, or a
//     prefix of the magic: clearly ndst's, clearly damaged). Anything else
//     (a directory, a FIFO, a device, another program's file) is refused by
//     Lock, Load, Save and Reset with an error wrapping ErrForeign, and no
//     lock file is created beside it. Every file is opened without
//     blocking and read with a bound (package safefile).
//   - Symbolic links are refused, never followed, as the state path and as
//     the lock file: following one would read through the link and then
//     replace the link by a regular file (the rename), leaving the target
//     stale and two lock files for one registry. Links in the directories
//     above the state file are followed as usual.
//   - Reset removes a valid state file, moves a corrupt one (or one of
//     another format version) aside to path+".corrupt" (or ".vN"), never
//     overwriting an earlier copy, and refuses anything else.
package statefile

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/ndst-project/ndst/ifname"
	"github.com/ndst-project/ndst/safefile"
)

// Version is the newest format version this package writes and reads;
// MinVersion the oldest it reads.
const (
	Version    = 3
	MinVersion = 1
)

// MaxNameLen is the longest device name, IFNAMSIZ-1 bytes.
const MaxNameLen = ifname.MaxLen

// MaxFileSize bounds the state files Load reads: about 60 million devices,
// far above anything the backends can create.
const MaxFileSize = 1 << 30

// Device is one registered device. (Name comes first so that the struct
// packs into 24 bytes instead of 32: a decoded registry of 10^6 devices is
// 8 MB smaller.)
type Device struct {
	Name    string // 1..15 bytes
	Ifindex int32
	Flags   uint32 // backend-defined bits, e.g. bit 0 = administratively up
}

// State is the persisted registry.
type State struct {
	// NextIfindex is the ifindex allocator's cyclic cursor (kernel
	// dev_new_index semantics); 0 in a fresh namespace.
	NextIfindex int32
	// Devices in strictly ascending Ifindex order: the initial namespace's.
	Devices []Device
	// Namespaces are the other network namespaces, in strictly ascending
	// name order (format version 2).
	Namespaces []Namespace
	// Veths are the veth pairs, in strictly ascending order of their A
	// ends (format version 2).
	Veths []VethPair
	// Lowers link VLANs and macvlans to their lower devices, in strictly
	// ascending order of their children (format version 3, lower.go).
	Lowers []LowerLink
}

// Errors wrapped by the errors this package returns; test with errors.Is.
var (
	// ErrCorrupt: the file is damaged (truncated, garbage, checksum
	// mismatch, or contents that break the State invariants).
	ErrCorrupt = errors.New("state file is corrupt")
	// ErrVersion: the file has a format version this code does not read.
	ErrVersion = errors.New("state file has an unsupported format version")
	// ErrLocked: another process held the lock for longer than the wait.
	ErrLocked = errors.New("state file is locked by another process")
	// ErrInvalid: Save or Encode was handed a State that breaks the
	// invariants; nothing was written.
	ErrInvalid = errors.New("invalid state")
	// ErrForeign: the path is not ndst's to read, replace or remove: not a
	// regular file, a symbolic link, or a file that is not ndst state.
	ErrForeign = errors.New("not an ndst state file")
)

// ForeignError reports a path ndst refuses to use for its state, its lock or
// a reset. It wraps ErrForeign (and, for a path that is not a regular file,
// the *safefile.NotRegularError that says what it is).
type ForeignError struct {
	Path string
	// What is "state path" or "lock file".
	What string
	// Hint says what to do instead.
	Hint string
	err  error
}

func (e *ForeignError) Error() string {
	var nr *safefile.NotRegularError
	switch {
	case errors.As(e.err, &nr) && nr.Mode&fs.ModeSymlink != 0:
		return fmt.Sprintf("%s %s is a symbolic link (to %s); %s", e.What, e.Path, nr.Target, e.Hint)
	case errors.As(e.err, &nr):
		return fmt.Sprintf("%s %s is %s, not a state file; %s", e.What, e.Path, safefile.Describe(nr.Mode), e.Hint)
	}
	return fmt.Sprintf("%s %s is not ndst's: %s", e.What, e.Path, e.Hint)
}

// Unwrap returns ErrForeign and the underlying error.
func (e *ForeignError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrForeign}
	}
	return []error{ErrForeign, e.err}
}

// resetHint is the suggested fix printed with every corruption error; it
// names the file, so following it never removes a different state file.
func resetHint(path string) string {
	if path == "" {
		return "move it away or run 'ndst reset --backend sim'"
	}
	return fmt.Sprintf("move it away or run 'ndst --state %s reset'", path)
}

// FormatError reports a state file that cannot be read: corruption, an
// unsupported version, or content that is not ndst state at all. It wraps
// ErrCorrupt, ErrVersion or ErrForeign.
type FormatError struct {
	// Path is the file's path; empty when decoding bytes from elsewhere.
	Path string
	// Reason says what is wrong, e.g. "checksum mismatch".
	Reason string
	// Version is the file's format version, set for ErrVersion.
	Version int
	kind    error
}

func (e *FormatError) Error() string {
	what := "state data"
	if e.Path != "" {
		what = "state file " + e.Path
	}
	if e.kind == ErrForeign {
		if e.Path == "" {
			return fmt.Sprintf("not ndst state data (%s)", e.Reason)
		}
		return fmt.Sprintf("%s is not an ndst state file (%s); ndst reads, replaces and removes only its own state files: pass --state a new path or one ndst wrote",
			e.Path, e.Reason)
	}
	if e.kind == ErrVersion {
		if e.Version > Version {
			return fmt.Sprintf("%s has format version %d, newer than this ndst reads (versions %d to %d); use a newer ndst, or %s",
				what, e.Version, MinVersion, Version, resetHint(e.Path))
		}
		return fmt.Sprintf("%s has format version %d, older than this ndst reads (versions %d to %d); %s",
			what, e.Version, MinVersion, Version, resetHint(e.Path))
	}
	return fmt.Sprintf("%s is corrupt (%s); %s", what, e.Reason, resetHint(e.Path))
}

// Unwrap returns ErrCorrupt, ErrVersion or ErrForeign.
func (e *FormatError) Unwrap() error { return e.kind }

// Corrupt is the error of a backend that finds, in a state file that
// decodes, what it cannot take: flag bits it does not define, a
// combination that cannot be. It is a *FormatError wrapping ErrCorrupt,
// named and with the fix like every other.
func Corrupt(path, reason string) error {
	return &FormatError{Path: path, Reason: reason, kind: ErrCorrupt}
}

func corruptf(format string, args ...any) *FormatError {
	return &FormatError{Reason: fmt.Sprintf(format, args...), kind: ErrCorrupt}
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}
