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
