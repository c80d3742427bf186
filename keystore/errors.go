package keystore

import "errors"

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
)
