package server

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStoreTimeout matches (errors.Is) every StoreTimeoutError: a store
// call of Once that had not answered within WithStoreTimeout, or a
// transaction that commits an effect with its key past its Completion's
// Timeout (pgstore's CompleteBatch and CompleteTx).
var ErrStoreTimeout = errors.New("server: the store did not answer in time")

// StoreTimeoutError is what Once returns when a store call has not
// answered within WithStoreTimeout (default DefaultStoreTimeout): the
// store is stalled or black-holed. A store's transactional hook returns
// it (Op "complete") when the transaction that commits an effect with its
// key ran past Completion.Timeout and was rolled back: a handler answers
// 503 with Retry-After. A consumer leaves the message for
// redelivery. Op says which call stalled: "reserve" (fn did not run),
// "complete" (fn ran, its result may not be stored; the id is freed by
// its lease) or "release".
type StoreTimeoutError struct {
	Op      string
	Timeout time.Duration
}

func (e *StoreTimeoutError) Error() string {
	return fmt.Sprintf("server: the store did not answer %s within %s", e.Op, e.Timeout)
}

// Is matches ErrStoreTimeout and context.DeadlineExceeded.
func (e *StoreTimeoutError) Is(target error) bool {
	return target == ErrStoreTimeout || target == context.DeadlineExceeded
}

// storeCall runs call under a deadline of timeout and turns an error that
// came with that deadline, and not with parent's end, into a
// StoreTimeoutError.
func storeCall(parent context.Context, op string, timeout time.Duration, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	err := call(ctx)
	if err != nil && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &StoreTimeoutError{Op: op, Timeout: timeout}
	}
	return err
}
