package keystore

import (
	"fmt"
	"runtime/debug"
)

// guard runs fn, which touches a bbolt file, and turns a panic into an
// error wrapping ErrCorrupt that names path. bbolt panics on some damaged
// pages, and reading a memory-mapped page past the end of a truncated file
// raises a fault, which SetPanicOnFault turns into a panic for this
// goroutine only. bbolt's managed transactions roll back (releasing their
// locks) as the panic unwinds, so the store stays usable for the parts of
// the file that are sound.
func guard(path string, fn func() error) (err error) {
	prev := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(prev)
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, path, p)
		}
	}()
	return fn()
}
