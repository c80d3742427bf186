//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package keystore

import (
	"errors"
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lockFile takes the lock bbolt takes on f (flock, exclusive unless
// shared), waiting up to timeout, so that checkPages reads a file no
// other writer is changing. bbolt's own flock of the same open file then
// succeeds at once: a lock belongs to the open file, not to the call.
func lockFile(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		if time.Now().After(deadline) {
			return berrors.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}
