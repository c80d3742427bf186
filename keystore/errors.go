package keystore

import (
	"errors"
	"fmt"
)

// Sentinel errors of every Store. Match them with errors.Is; the returned
// errors wrap them with detail: the path, or the key as key# and the first
// 8 hex digits of its SHA-256 (an error never holds a raw key, so it is
// safe to log).
var (
	// ErrNotFound: no record with that key or name.
	ErrNotFound = errors.New("keystore: not found")
	// ErrDuplicateKey: Create was given a key that is already stored.
	ErrDuplicateKey = errors.New("keystore: duplicate key")
	// ErrLocked: another process holds the keystore file.
	ErrLocked = errors.New("keystore: locked by another process")
	// ErrCorrupt: the file is not a keystore, or is damaged.
	ErrCorrupt = errors.New("keystore: file is corrupt or not an idem keystore")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("keystore: closed")
	// ErrSettled: an Update would change a settled record (Succeeded or
	// Failed) into another state. A settled record is never changed back:
	// its answer is the intent's truth.
	ErrSettled = errors.New("keystore: record is settled; never changed back")
	// ErrClaimLost: UpdateClaimed was called by an owner whose claim on
	// the record another owner has taken since; the write was not made.
	ErrClaimLost = errors.New("keystore: claim lost to another owner; write refused")
	// ErrReadOnly: a write to a keystore opened read-only
	// (BoltOptions.ReadOnly); nothing was written.
	ErrReadOnly = errors.New("keystore: opened read-only; write refused")
	// ErrFileReplaced: the keystore file at the path a Bolt was opened
	// with was deleted, or replaced by another file, while open. Its
	// writes would go to a file no later open finds, so they fail: the
	// write that meets it (its commit went to the old file, which nothing
	// will read) and every write after it. Close the store and find out
	// what removed the file before opening the path again: a new file
	// there does not hold the intents the old one did.
	ErrFileReplaced = errors.New("keystore: file deleted or replaced while open; writes refused")
)

// CorruptRecordsError is returned by List (and Purge, Claim), with the
// records it could read, when some stored records are damaged: they are
// left out of the result and named here, so one bad record never hides
// the good ones. It matches ErrCorrupt.
type CorruptRecordsError struct {
	// Keys are the stored keys of the damaged records, as stored (they
	// may themselves be damaged).
	Keys []string
	// Errs holds why each could not be read, in the order of Keys.
	Errs []error
}

// Error names how many records were left out.
func (e *CorruptRecordsError) Error() string {
	if len(e.Keys) == 1 {
		return "keystore: 1 damaged record left out: " + e.Errs[0].Error()
	}
	return fmt.Sprintf("keystore: %d damaged records left out (first: %v)", len(e.Keys), e.Errs[0])
}

// Is reports that the error matches ErrCorrupt.
func (e *CorruptRecordsError) Is(target error) bool { return target == ErrCorrupt }

// CorruptRecords collects the damaged records a scan passes over, so a
// store (in this package or outside it) reports them all at once; the zero
// value is empty and ready to use.
type CorruptRecords struct {
	keys []string
	errs []error
}

// Add records that the record under key could not be read, and why.
func (c *CorruptRecords) Add(key string, err error) {
	c.keys = append(c.keys, key)
	c.errs = append(c.errs, err)
}

// Merge adds every record o holds.
func (c *CorruptRecords) Merge(o CorruptRecords) {
	c.keys = append(c.keys, o.keys...)
	c.errs = append(c.errs, o.errs...)
}

// Len is how many damaged records c holds.
func (c CorruptRecords) Len() int { return len(c.keys) }

// Err is the *CorruptRecordsError naming the damaged records, nil if none.
func (c CorruptRecords) Err() error {
	if len(c.keys) == 0 {
		return nil
	}
	return &CorruptRecordsError{Keys: c.keys, Errs: c.errs}
}
