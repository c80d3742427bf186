package keystore

import (
	"os"
	"time"
)

// Defaults of BoltOptions, used for zero fields and for nil options.
const (
	// DefaultBoltTimeout is how long OpenBolt waits for another process to
	// release the file.
	DefaultBoltTimeout = time.Second
	// DefaultBoltMode is the permission of a new keystore file: the file
	// holds request bodies, so only its owner may read it.
	DefaultBoltMode os.FileMode = 0o600
	// DefaultDeferDelay is how long a write of UpdateDeferred waits for
	// another write's commit to join before it commits on its own.
	DefaultDeferDelay = 10 * time.Millisecond
)

// BoltOptions tune OpenBolt. The zero value, like nil, means the defaults.
type BoltOptions struct {
	// Timeout is how long OpenBolt waits for the file lock held by another
	// process; zero or negative means DefaultBoltTimeout. When it runs out
	// OpenBolt returns an error wrapping ErrLocked that names the path.
	Timeout time.Duration
	// Mode is the permission of a new file, applied as given (the umask
	// does not narrow it); zero means DefaultBoltMode. An existing file
	// keeps its mode.
	Mode os.FileMode
	// NoSync skips fdatasync on commit. UNSAFE: a crash of the machine (not
	// only of the process) can then lose intents whose writes had returned,
	// or damage the file, and a lost intent can be paid twice. For tests and
	// benchmarks only.
	NoSync bool
	// DeferDelay is how long a write of UpdateDeferred waits for another
	// write's commit to join before it commits on its own: the longest a
	// deferred write stays exposed to a crash while the store is otherwise
	// idle, plus one commit. Zero or negative means DefaultDeferDelay.
	DeferDelay time.Duration
	// ReadOnly opens the file for reading only: it is opened O_RDONLY
	// under a shared lock (other readers may hold it too, a writer waits),
	// never created, migrated or written, not even at Close, and every
	// write fails with ErrReadOnly. For tools that inspect a keystore.
	ReadOnly bool
	// NoCreate makes OpenBolt fail, with an error matching fs.ErrNotExist
	// that names the path, when no file is there, instead of creating an
	// empty keystore. A program that has run before sets it: a keystore
	// that went missing (a wrong path, a deleted file, an unmounted
	// volume) is then an error, not a fresh start that forgets every
	// intent and pays them again.
	NoCreate bool
	// AcceptOlderMeta opens a file one of whose two meta pages is damaged,
	// as of the sound one, which is what bbolt does silently; without it
	// OpenBolt fails with ErrMetaDamaged. If the damaged page held the
	// newer transaction, its commit is lost, and the first commit made
	// after opening (not with ReadOnly) rewrites that page, making the
	// loss final. Open read-only with it first to see what the file holds.
	AcceptOlderMeta bool
}

// withDefaults returns a copy of o with zero fields set to the defaults.
func (o *BoltOptions) withDefaults() BoltOptions {
	var c BoltOptions
	if o != nil {
		c = *o
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultBoltTimeout
	}
	if c.DeferDelay <= 0 {
		c.DeferDelay = DefaultDeferDelay
	}
	if c.Mode == 0 {
		c.Mode = DefaultBoltMode
	}
	return c
}
