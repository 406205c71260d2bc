package statefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"
)

// ResetReport says what Reset did.
type ResetReport struct {
	Path string
	// Existed is false when there was no state file: nothing was done.
	Existed bool
	// Devices is how many devices the removed (valid) state held.
	Devices int
	// Problem says what was wrong with an unreadable state file, which
	// was moved to Kept instead of being removed.
	Problem string
	Kept    string
}

// String is the report in one sentence, for the reset command's output.
func (r *ResetReport) String() string {
	switch {
	case !r.Existed:
		return fmt.Sprintf("no state file at %s; nothing to do", r.Path)
	case r.Kept != "":
		return fmt.Sprintf("state file %s was unreadable (%s); moved it to %s, the registry is now empty", r.Path, r.Problem, r.Kept)
	}
	return fmt.Sprintf("removed %s (%d devices)", r.Path, r.Devices)
}

// maxKept bounds the search for a free name for the copy of a corrupt file.
const maxKept = 100

// Reset forgets the registry at path, holding its lock (waiting up to wait,
// stopping when ctx is done): a valid state file is removed; a corrupt one,
// or one of another format version, is moved to path+".corrupt" (or
// path+".vN"), with a numeric suffix if that name is taken, so its bytes are
// kept for a look; a missing one is nothing to do (and nothing is created).
// Anything that is not ndst's is refused with an error wrapping ErrForeign
// and left as it is.
func Reset(ctx context.Context, path string, wait time.Duration) (*ResetReport, error) {
	rep := &ResetReport{Path: path}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	exists, err := checkOwned(path)
	if err != nil {
		return nil, err
	}
	if !exists {
		// Nothing to forget; a lock file left by an earlier command goes,
		// taken first so that nobody is using it.
		if _, err := os.Lstat(path + ".lock"); err == nil {
			if l, err := LockContext(ctx, path, wait); err == nil {
				if _, serr := os.Lstat(path); os.IsNotExist(serr) {
					_ = l.Remove()
				} else {
					l.Unlock()
				}
			}
		}
		return rep, nil
	}
	lock, err := LockContext(ctx, path, wait)
	if err != nil {
		return nil, err
	}
	// With the state gone, its lock file goes too (FileLock.Remove); a
	// state file that stays (it could not be removed) keeps its lock.
	removeLock := false
	defer func() {
		if removeLock {
			_ = lock.Remove()
		} else {
			lock.Unlock()
		}
	}()
	if why := lock.ReadOnly(); why != "" {
		return nil, fmt.Errorf("cannot reset state file %s: %s", path, why)
	}
	st, err := LoadContext(ctx, path)
	var fe *FormatError
	switch {
	case err == nil:
		if err := os.Remove(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return rep, nil
			}
			return nil, fmt.Errorf("cannot remove state file: %w", err)
		}
		rep.Existed, rep.Devices = true, len(st.Devices)
		removeLock = true
		return rep, nil
	case errors.As(err, &fe) && (fe.kind == ErrCorrupt || fe.kind == ErrVersion):
		suffix := ".corrupt"
		rep.Problem = fe.Reason
		if fe.kind == ErrVersion {
			suffix = ".v" + strconv.Itoa(fe.Version)
			rep.Problem = "format version " + strconv.Itoa(fe.Version)
		}
		kept, err := moveAside(path, suffix)
		if err != nil {
			return nil, err
		}
		rep.Existed, rep.Kept = true, kept
		removeLock = true
		return rep, nil
	}
	return nil, err
}

// moveAside renames path to the first free name of path+suffix,
// path+suffix+".2", ... It never replaces an existing file: the new name is
// made with link(2), which fails if it exists; where the file system has no
// hard links, with a rename after checking the name is free.
func moveAside(path, suffix string) (string, error) {
	for i := 1; i <= maxKept; i++ {
		name := path + suffix
		if i > 1 {
			name += "." + strconv.Itoa(i)
		}
		err := os.Link(path, name)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			if _, serr := os.Lstat(name); !errors.Is(serr, fs.ErrNotExist) {
				continue
			}
			if err := os.Rename(path, name); err != nil {
				return "", fmt.Errorf("cannot move state file %s aside: %w", path, err)
			}
			return name, nil
		}
		if err := os.Remove(path); err != nil {
			return "", fmt.Errorf("kept a copy of state file %s as %s, but cannot remove it: %w", path, name, err)
		}
		return name, nil
	}
	return "", fmt.Errorf("cannot move state file %s aside: %s through %s.%d all exist; remove old copies", path, path+suffix, path+suffix, maxKept)
}
