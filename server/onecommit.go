package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrOneCommitUnsupported is what WrapOneCommit returns when the
// middleware's store cannot run a request's reservation, effect and
// completion as one transaction (it is no OneCommitStore): the memory and
// Redis stores, whose effects do not live in their database. It is
// returned when the route is wrapped, never discovered by a request.
var ErrOneCommitUnsupported = errors.New("server: the store cannot commit a request in one transaction (it is no OneCommitStore)")

// ErrKeyTaken is what OneCommitStore.CommitOnce returns when the key
// already has a record it cannot take over: completed within its
// retention, or reserved by a request still inside its lease. Nothing
// was written; the layer then answers as Reserve's record says (a replay,
// 422 or 409).
var ErrKeyTaken = errors.New("server: the idempotency key already has a record")

// OnceRequest is one guarded request as a OneCommitStore commits it.
type OnceRequest struct {
	Scope       Scope
	Key         string
	Fingerprint string
	// Lease is how long a record the store writes as reserved, while the
	// transaction is open, would hold the key were it ever seen.
	Lease time.Duration
	// Retention is how long the committed answer is replayed.
	Retention time.Duration
	// Timeout bounds the transaction (zero: unbounded); past it the
	// store rolls back and returns a *StoreTimeoutError.
	Timeout time.Duration
}

// OnceRun runs the handler inside the store's transaction: ctx carries
// the store's transaction for the handler's effect (pgstore.OnceFrom). It
// returns the answer to commit with the effect, or an error, which rolls
// the effect back and leaves the key free.
type OnceRun func(ctx context.Context) (Response, error)

// OneCommitStore is a store whose records live in the same database as a
// handler's effect, and that can make one transaction of a request: the
// key's record, the effect and the answer commit together, once, or not
// at all. A concurrent duplicate of the key waits for that transaction
// and then finds its answer.
type OneCommitStore interface {
	// CommitOnce claims req's key, runs run within the same transaction
	// and commits the key's record completed with run's answer. It
	// returns nil once committed; ErrKeyTaken, with nothing written,
	// when the key has a record it cannot take over; run's error, rolled
	// back; or the store's failure (a *StoreTimeoutError past
	// req.Timeout).
	CommitOnce(ctx context.Context, req OnceRequest, run OnceRun) error
}

// notStoredError is what the layer's OnceRun returns when the handler's
// answer is not final (a refusal, a 5xx, a panic): the store rolls the
// effect back and the answer is sent as it is, the key left free.
type notStoredError struct{ status int }

func (e *notStoredError) Error() string {
	return fmt.Sprintf("server: answer %d is not stored; the transaction is rolled back", e.status)
}
