package idem

import (
	"context"
	"time"

	"github.com/idemkit/idem/keystore"
)

// DefaultWriteGrace bounds the keystore writes that record what a call
// learnt (an answer, the attempts, a verdict) once the call's context has
// ended: the writes are still made, since losing them would send the
// intent again, but Do returns at most this long after its deadline
// whatever the keystore does (a stalled connection, a disk that blocks).
// It is one grace per call, shared by every write, lookup and claim
// release the call makes after its deadline, or after one of its keystore
// waits ran out (see WithStoreTimeout). A write cut short leaves the
// intent as the keystore last recorded it, Pending, and its resume gets
// the server's replay with the same key.
const DefaultWriteGrace = 2 * time.Second

// write stores rec with fn (the store's Update, or storeSettled) under
// ctx's values without its cancellation, bounded by the call's keystore
// budget (storewait.go): the store timeout while the call's context is
// live, and one write grace for all of the call's waits once it has
// ended. A store that does not return by then is left to finish on its
// own, and the caller is told the write did not complete (the error
// matches ErrStoreTimeout).
//
// A store whose writes never wait on I/O (keystore.NonBlocking, the memory
// keystore) has nothing to stall: it is called on this goroutine, still
// without ctx's cancellation, and the timer and goroutine are saved.
func (c *Client) write(ctx context.Context, fn func(context.Context, *keystore.Record) error, rec *keystore.Record) error {
	c.scrubLastError(rec)
	if nb, ok := c.store.(keystore.NonBlocking); ok && nb.WritesNeverBlock() {
		wctx := ctx
		if ctx.Done() != nil { // a context that can end; one that cannot needs no shield
			wctx = context.WithoutCancel(ctx)
		}
		if err := fn(wctx, rec); err != nil {
			return &storeWriteError{err: err}
		}
		return nil
	}
	_, err := waitStore(c, ctx, "keystore write", 0, func(wctx context.Context) (struct{}, error) {
		return struct{}{}, fn(wctx, rec)
	})
	if err != nil {
		return &storeWriteError{err: err}
	}
	return nil
}

// writeSettled stores a settled rec with storeSettled within the write
// grace. A keystore.QuickDeferrer is first asked to take the deferred
// write at once on this goroutine, which it does only when nothing in it
// can wait on I/O; the writes it declines are bounded as write bounds
// them.
func (c *Client) writeSettled(ctx context.Context, rec *keystore.Record) error {
	c.scrubLastError(rec)
	if q, ok := c.store.(keystore.QuickDeferrer); ok && rec.State.Settled() && ctx.Value(heldClaimKey{}) == nil {
		done, err := q.TryUpdateDeferred(context.WithoutCancel(ctx), rec)
		switch {
		case done && err != nil:
			return &storeWriteError{err: err}
		case done:
			return nil
		}
	}
	return c.write(ctx, c.storeSettledFn, rec)
}

// storeWriteError marks a failed keystore write, so Do shows the caller
// the intent as the keystore holds it rather than as the write would
// have left it.
type storeWriteError struct{ err error }

func (e *storeWriteError) Error() string { return e.err.Error() }
func (e *storeWriteError) Unwrap() error { return e.err }

// scrubLastError drops from rec's LastError the value of any secret query
// parameter a URL in it shows, before the keystore gets it: whatever the
// message came from (a request editor's error, a server's Location), the
// keystore never holds a secret (redactQueryText).
func (c *Client) scrubLastError(rec *keystore.Record) {
	if rec != nil && rec.LastError != "" {
		rec.LastError = redactQueryText(rec.LastError, c.cfg.secretParams)
	}
}
