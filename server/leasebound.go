package server

import (
	"errors"
	"fmt"
	"time"
)

// LeaseStoreTimeouts is how many store timeouts a lease must last at
// least (CheckLease): the reservation's answer may reach its owner one
// store timeout after the lease began, the completion (or the handler's
// transaction that commits its effect with the key, see Held) may take
// another, and one more is left for the handler itself and for a store
// whose clock the lease is kept on. A shorter lease lets a retry take the
// key over while its owner is still completing it: the owner's answer is
// then not stored, and the retry runs the handler again.
const LeaseStoreTimeouts = 3

// ErrLeaseTooShort matches (errors.Is) every *LeaseTooShortError.
var ErrLeaseTooShort = errors.New("server: lease too short for the store timeout")

// LeaseTooShortError is what New returns when the lease (WithLease) does
// not outlast LeaseStoreTimeouts store timeouts (WithStoreTimeout).
type LeaseTooShortError struct {
	Lease        time.Duration // the lease given
	StoreTimeout time.Duration // the store timeout given
}

// MinLease is the shortest lease the store timeout allows for.
func (e *LeaseTooShortError) MinLease() time.Duration { return MinLease(e.StoreTimeout) }

// Error says both values and what to change.
func (e *LeaseTooShortError) Error() string {
	return fmt.Sprintf("server: lease %s is shorter than %d × store timeout %s: a takeover could happen while the owner is still completing; "+
		"raise the lease to at least %s or lower the store timeout to at most %s",
		e.Lease, LeaseStoreTimeouts, e.StoreTimeout, e.MinLease(), (e.Lease / LeaseStoreTimeouts).Truncate(time.Millisecond))
}

// Is matches ErrLeaseTooShort.
func (e *LeaseTooShortError) Is(target error) bool { return target == ErrLeaseTooShort }

// MinLease is the shortest lease a store timeout allows for:
// LeaseStoreTimeouts times it.
func MinLease(storeTimeout time.Duration) time.Duration {
	return LeaseStoreTimeouts * storeTimeout
}

// CheckLease returns a *LeaseTooShortError when lease is shorter than
// MinLease(storeTimeout), nil otherwise. New checks its options with it;
// a server that builds its options elsewhere (a command line) can check
// them before.
func CheckLease(lease, storeTimeout time.Duration) error {
	if lease < MinLease(storeTimeout) {
		return &LeaseTooShortError{Lease: lease, StoreTimeout: storeTimeout}
	}
	return nil
}
