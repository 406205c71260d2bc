package statefile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// Load reads and validates the state file at path. A missing file is an empty
// State and no error. A damaged file or one of another format version is an
// error (a *FormatError naming path, wrapping ErrCorrupt or ErrVersion); it is
// never replaced or repaired here.
func Load(path string) (*State, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &State{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read state file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read state file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, withPath(corruptf("not a regular file (%s)", fi.Mode().Type()), path)
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
	if n, err := io.Copy(io.MultiWriter(&body, crc), io.LimitReader(f, size-headerSize)); err != nil {
		return nil, readErr(err, path)
	} else if n != size-headerSize {
		return nil, withPath(corruptf("truncated while reading"), path)
	}
	if err := checkSum(hdr, crc.Sum32()); err != nil {
		return nil, withPath(err, path)
	}
	st, err := decodeBody(body.String())
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
// (error wrapping ErrInvalid) writes nothing.
//
// Call Save while holding Lock(path): after a successful rename it removes
// temporary files that earlier, interrupted Saves left behind.
func Save(path string, s *State) error {
	data, err := Encode(s)
	if err != nil {
		return fmt.Errorf("not saving state file %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return fmt.Errorf("not saving state file %q: the path names a directory", path)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the state directory: %w", err)
	}
	prefix := base + ".tmp-"
	f, err := os.CreateTemp(dir, prefix+"*")
	if err != nil {
		return fmt.Errorf("cannot write state file %s: %w", path, err)
	}
	tmp := f.Name()
	if err := writeSynced(f, data); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot write state file %s: %w", path, err)
	}
	if beforeRename != nil {
		beforeRename(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("cannot replace state file: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("state file %s was replaced, but syncing its directory failed: %w", path, err)
	}
	removeLeftovers(dir, prefix)
	return nil
}

// writeSynced writes data to f, makes its mode 0600, syncs and closes it.
func writeSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(0o600) // CreateTemp already uses 0600; make it explicit.
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
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
