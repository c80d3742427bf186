package keystore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
)

// fileWatch notices that the keystore file was deleted or replaced (a
// rename over it, a restore from backup) while a Bolt holds it open. bbolt
// writes to the open file, whatever its name has become: without the
// watch, commits to an unlinked file are acknowledged, and the next open
// of the path finds none of them (or creates an empty keystore there).
//
// It costs one stat of the path a commit (not a record): check runs once
// the commit of a whole group is durable, before any of its writers is
// told, so a write is acknowledged only if the file it went to is still
// the one at the path.
type fileWatch struct {
	path  string
	ident os.FileInfo // of the open file, from fstat at open
	// lost holds the ErrFileReplaced error once check has seen the
	// file gone: every later write fails with it, without a stat.
	lost atomic.Pointer[error]
}

// newFileWatch watches path, whose open file is f.
func newFileWatch(path string, f *os.File) (*fileWatch, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("keystore: open %s: %w", path, err)
	}
	return &fileWatch{path: path, ident: info}, nil
}

// refused returns the error that ends every write once the file was seen
// gone, nil before; it makes no system call.
func (w *fileWatch) refused() error {
	if p := w.lost.Load(); p != nil {
		return *p
	}
	return nil
}

// check stats the path and reports ErrFileReplaced if the open file is no
// longer there (sticky). Another failure of the stat (the directory
// unreadable) fails this commit's writes without ending the store's: the
// write may be sound, but it cannot be shown to be where a reopen looks.
func (w *fileWatch) check() error {
	if err := w.refused(); err != nil {
		return err
	}
	info, err := os.Stat(w.path)
	var how string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		how = "deleted"
	case err != nil:
		return fmt.Errorf("keystore: commit to %s: cannot tell whether the file is still there: %w", w.path, err)
	case !os.SameFile(info, w.ident):
		how = "replaced by another file"
	default:
		return nil
	}
	lost := fmt.Errorf("%w: %s was %s while open; the last commit went to the old file, which no later open reads. "+
		"Close the store, find what removed the file, and restore it before reopening the path", ErrFileReplaced, w.path, how)
	w.lost.CompareAndSwap(nil, &lost)
	return w.refused()
}

// refuseWrite returns why a write must not start: the store is read-only,
// or its file is gone. It makes no system call.
func (b *Bolt) refuseWrite() error {
	if b.readOnly {
		return fmt.Errorf("%w: %s", ErrReadOnly, b.path)
	}
	if b.watch != nil {
		return b.watch.refused()
	}
	return nil
}

// verifyCommit runs after a commit is durable and before its writers are
// told: see fileWatch.
func (b *Bolt) verifyCommit() error {
	if b.watch == nil {
		return nil
	}
	return b.watch.check()
}
