package statefile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndst-project/ndst/safefile"
)

// DefaultPath is $XDG_STATE_HOME/ndst/state when XDG_STATE_HOME is set to an
// absolute path (the XDG spec says to ignore relative ones), else
// ~/.local/state/ndst/state.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ndst", "state"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("cannot place the state file: %v; set XDG_STATE_HOME or pass --state FILE", err)
	}
	return filepath.Join(home, ".local", "state", "ndst", "state"), nil
}

// checkPath refuses a state path that names a directory by its spelling
// ("DIR/", ".", ".."), or lies on a kernel pseudo file system (procfs,
// sysfs, ...: its files are kernel settings), before anything is looked at
// or created.
func checkPath(path string) error {
	if path == "" {
		return errors.New("the state path is empty; pass --state FILE")
	}
	base := filepath.Base(path)
	if os.IsPathSeparator(path[len(path)-1]) || base == "." || base == ".." {
		return fmt.Errorf("state path %q names a directory; --state takes a file, for example %s", path,
			filepath.Join(path, "state"))
	}
	return safefile.CheckNotPseudo(path)
}

// linkHint is the advice for a state path that is a symbolic link.
const linkHint = "ndst does not follow links for its state (one registry, one file, one lock): pass the link's target to --state"

// foreign turns a safefile refusal of a state path into a *ForeignError.
func foreign(path string, err error) error {
	var nr *safefile.NotRegularError
	if !errors.As(err, &nr) {
		return err
	}
	hint := "ndst keeps its state only in regular files; pass --state a file path"
	switch {
	case nr.Mode&fs.ModeSymlink != 0:
		hint = linkHint
	case nr.Mode.IsDir():
		hint = "--state takes a file, for example " + filepath.Join(path, "state")
	}
	return &ForeignError{Path: path, What: "state path", Hint: hint, err: err}
}

// checkOwned reports whether path exists and refuses it unless it is ndst's:
// a regular file (not a link) that is empty or begins with the magic or a
// prefix of it. Only those first bytes are read.
func checkOwned(path string) (exists bool, err error) {
	f, err := safefile.Open(path, safefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, foreign(path, fmt.Errorf("cannot read state file: %w", err))
	}
	defer f.Close()
	head := make([]byte, len(magic))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return true, fmt.Errorf("cannot read state file: %w", err)
	}
	if herr := checkHeader(head[:n]); errors.Is(herr, ErrForeign) {
		return true, withPath(herr, path)
	}
	return true, nil
}

// Load reads and validates the state file at path; it is LoadContext without
// cancellation.
func Load(path string) (*State, error) { return LoadContext(context.Background(), path) }

// LoadContext reads and validates the state file at path, stopping with
// ctx.Err() when ctx is done. A missing file is an empty State and no
// error. A damaged file or one of another format version is an error (a
// *FormatError naming path, wrapping ErrCorrupt or ErrVersion); it is never
// replaced or repaired here. A path that is not ndst's (see ErrForeign) is
// refused without reading more than its first bytes.
func LoadContext(ctx context.Context, path string) (*State, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	f, err := safefile.Open(path, safefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, foreign(path, fmt.Errorf("cannot read state file: %w", err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read state file: %w", err)
	}
	size := fi.Size()
	// Look at the header before reading (and allocating for) the rest, so a
	// large file of garbage costs nothing.
	hdr := make([]byte, min(size, headerSize))
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, readErr(err, path)
	}
	if err := checkHeader(hdr); err != nil {
		return nil, withPath(err, path)
	}
	want := headerSize + int64(binary.LittleEndian.Uint32(hdr[8:]))
	switch {
	case size < want:
		return nil, withPath(corruptf("truncated: %d bytes, the header announces %d", size, want), path)
	case size > want:
		return nil, withPath(corruptf("%d bytes of trailing garbage after the body", size-want), path)
	case size > MaxFileSize:
		return nil, withPath(corruptf("%d bytes, more than the %d-byte limit", size, MaxFileSize), path)
	}
	// Read the body straight into the string the names will share, and
	// checksum it on the way: no second copy of a file that may be tens of
	// megabytes.
	var body strings.Builder
	body.Grow(int(size - headerSize))
	crc := crc32.New(castagnoli)
	crc.Write(hdr[:12])
	if n, err := io.Copy(io.MultiWriter(&body, crc), safefile.NewReader(ctx, io.LimitReader(f, size-headerSize))); err != nil {
		return nil, readErr(err, path)
	} else if n != size-headerSize {
		return nil, withPath(corruptf("truncated while reading"), path)
	}
	if err := checkSum(hdr, crc.Sum32()); err != nil {
		return nil, withPath(err, path)
	}
	st, err := decodeBody(binary.LittleEndian.Uint16(hdr[6:]), body.String())
	if err != nil {
		return nil, withPath(err, path)
	}
	return st, nil
}

func readErr(err error, path string) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return withPath(corruptf("truncated while reading"), path)
	}
	return fmt.Errorf("cannot read state file: %w", err)
}

func withPath(err error, path string) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		fe.Path = path
	}
	return err
}

// beforeRename, when set (by tests), runs after the temporary file is written
// and synced, just before it is renamed over the state file.
var beforeRename func(tmp string)

// Save writes s to path atomically: a temporary file in the same directory is
// written, synced and renamed over path, and the directory is synced, so a
// crash at any point leaves either the old file or the new one. The file's
// mode is 0600; a missing directory is created with mode 0700. An invalid s
// (error wrapping ErrInvalid) writes nothing, and so does a path that is not
// ndst's (ErrForeign).
//
// Call Save while holding Lock(path): after a successful rename it removes
// temporary files that earlier, interrupted Saves left behind.
func Save(path string, s *State) error {
	data, err := Encode(s)
	if err != nil {
		return fmt.Errorf("not saving state file %s: %w", path, err)
	}
	if err := checkPath(path); err != nil {
		return err
	}
	if _, err := checkOwned(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the state directory: %w", err)
	}
	prefix := base + ".tmp-"
	err = safefile.Replace(path, 0o600, data, &safefile.ReplaceOptions{TempPattern: prefix + "*", BeforeRename: beforeRename})
	switch {
	case cannotWrite(err):
		return fmt.Errorf("cannot write state file %s: its directory takes no new files (%v)", path, unwrapPath(err))
	case err != nil:
		return fmt.Errorf("cannot write state file %s: %w", path, foreign(path, err))
	}
	removeLeftovers(dir, prefix)
	return nil
}

// removeLeftovers deletes temporary files of interrupted Saves. Failures are
// ignored: a leftover costs disk space, never correctness.
func removeLeftovers(dir, prefix string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
