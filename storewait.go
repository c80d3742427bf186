package idem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idemkit/idem/keystore"
)

// DefaultStoreTimeout bounds each keystore wait (a read, a claim, a
// write) of a call whose context has no nearer deadline: a Postgres
// connection to a partitioned server, or a disk that blocks, never holds
// a call without bound. A wait that runs out fails with an error matching
// ErrStoreTimeout; the intent stays as the keystore last recorded it
// (Pending, resumable with its key).
const DefaultStoreTimeout = 30 * time.Second

// WithStoreTimeout bounds each keystore wait of a call whose context has
// no nearer deadline (default DefaultStoreTimeout). The write grace
// (WithWriteGrace) still bounds what the keystore may take once the
// call's context has ended; whichever bound comes first applies. Stores
// that never block (the memory keystore) are not timed.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("idem: WithStoreTimeout(%s): need at least 1ms", d)
		}
		c.storeTimeout = d
		return nil
	}
}

// storeBudget is the bound one Do (or Reconcile, Settle) puts on its
// keystore waits, carried in its context. While the caller's context is
// live, each wait gets the store timeout, cut at the deadline plus the
// write grace. From the moment the call's context ends, or a wait runs
// out (the keystore is then taken as stalled), every later wait shares
// one write grace: the call returns at most one grace after its deadline,
// however many writes, lookups and claim releases it still makes.
type storeBudget struct {
	caller context.Context // the call's context, as its caller gave it

	mu       sync.Mutex
	graceEnd time.Time // zero until the call's context ended or a wait ran out
	// readUntil is the bound of the read the call is making (readStore),
	// zero when none: a wait made inside it once it has run out (a claim
	// released because the read after it failed) is a wait after a
	// timeout.
	readUntil time.Time
}

type storeBudgetKey struct{}

// withStoreBudget gives ctx the budget of one call. Stores that never
// block need none: nothing they do waits.
func (c *Client) withStoreBudget(ctx context.Context) context.Context {
	if c.storeNeverBlocks() {
		return ctx
	}
	return context.WithValue(ctx, storeBudgetKey{}, &storeBudget{caller: ctx})
}

// storeNeverBlocks reports whether the keystore says none of its writes
// waits on I/O (keystore.NonBlocking).
func (c *Client) storeNeverBlocks() bool {
	nb, ok := c.store.(keystore.NonBlocking)
	return ok && nb.WritesNeverBlock()
}

// budgetOf is the budget of the call ctx belongs to; a context that has
// none (a caller outside Do) gets one of its own, for this wait only.
func budgetOf(ctx context.Context) *storeBudget {
	if b, ok := ctx.Value(storeBudgetKey{}).(*storeBudget); ok {
		return b
	}
	return &storeBudget{caller: ctx}
}

// ended fixes the end of the call's one write grace, if it is not fixed
// yet: grace after the call's deadline, or after now when the call's
// context ended earlier (canceled) or a wait ran out. It returns it.
func (b *storeBudget) ended(now time.Time, grace time.Duration) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.graceEnd.IsZero() {
		from := now
		if d, ok := b.caller.Deadline(); ok && d.Before(now) {
			from = d
		}
		b.graceEnd = from.Add(grace)
	}
	return b.graceEnd
}

// limit is when a wait that starts now must give up.
func (b *storeBudget) limit(now time.Time, timeout, grace time.Duration) time.Time {
	if b.caller.Err() != nil {
		return b.ended(now, grace)
	}
	b.mu.Lock()
	end, read := b.graceEnd, b.readUntil
	b.mu.Unlock()
	if !end.IsZero() {
		return end // a wait of this call ran out: the keystore is stalled
	}
	if !read.IsZero() && !now.Before(read) {
		return b.ended(now, grace)
	}
	limit := now.Add(timeout)
	if d, ok := b.caller.Deadline(); ok && d.Add(grace).Before(limit) {
		limit = d.Add(grace)
	}
	return limit
}

// storeTimeoutError is what a keystore wait that ran out returns.
func storeTimeoutError(what string, bound time.Duration) error {
	return fmt.Errorf("%w: %s did not return within %s; it may still complete (%w)", ErrStoreTimeout, what, bound.Round(time.Millisecond), context.DeadlineExceeded)
}

// waitSeenKey carries, in this package's tests only, a func told of
// every keystore wait that had to wait (the store did not answer at once)
// when it ends: when it started, the instant the code had set for it to
// give up, and whether it ran out. A test checks those bounds instead of
// timing the call, which would test the machine's speed.
type waitSeenKey struct{}

// reportWait tells ctx's waitSeenKey func, if any, of a wait that ended.
func reportWait(ctx context.Context, what string, start, limit time.Time, ranOut bool) {
	if seen, ok := ctx.Value(waitSeenKey{}).(func(what string, start, limit time.Time, ranOut bool)); ok {
		seen(what, start, limit, ranOut)
	}
}

// waitStore runs fn, a keystore call, within the call's budget (see
// storeBudget), under ctx's values without its cancellation: what it
// stores or settles must be done even once the call's context has ended.
// A call that does not return in time is left to finish on its own (its
// result is dropped: fn must not write anything the caller reads), and
// the error matches ErrStoreTimeout.
//
// upTo, when positive, caps the wait further (a lookup that settles a
// doubt takes at most one grace).
func waitStore[T any](c *Client, ctx context.Context, what string, upTo time.Duration, fn func(context.Context) (T, error)) (T, error) {
	b := budgetOf(ctx)
	start := time.Now()
	limit := b.limit(start, c.cfg.storeTimeout, c.cfg.writeGrace)
	if upTo > 0 && start.Add(upTo).Before(limit) {
		limit = start.Add(upTo)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan storeResult[T], 1)
	go func() {
		v, err := fn(wctx)
		done <- storeResult[T]{v, err}
	}()
	if r, ok := receiveNow(done); ok {
		return r.v, r.err // the common case: no timer
	}
	timer := time.NewTimer(time.Until(limit))
	defer timer.Stop()
	callerDone := b.caller.Done()
	if b.caller.Err() != nil {
		callerDone = nil // already accounted for in limit
	}
	for {
		select {
		case r := <-done:
			reportWait(ctx, what, start, limit, false)
			return r.v, r.err
		case <-callerDone:
			// The call ended while the keystore worked: what is left of
			// this wait is the call's one grace.
			callerDone = nil
			if end := b.ended(time.Now(), c.cfg.writeGrace); end.Before(limit) {
				limit = end
				timer.Reset(time.Until(limit))
			}
		case <-timer.C:
			if r, ok := receiveNow(done); ok {
				reportWait(ctx, what, start, limit, false)
				return r.v, r.err // finished just as the bound ran out
			}
			b.ended(time.Now(), c.cfg.writeGrace)
			reportWait(ctx, what, start, limit, true)
			var zero T
			return zero, storeTimeoutError(what, limit.Sub(start))
		}
	}
}

// storeResult is what a keystore call waited on by waitStore returned.
type storeResult[T any] struct {
	v   T
	err error
}

// receiveNow takes a value from ch if one is there.
func receiveNow[T any](ch chan T) (T, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

// readStore runs fn, a keystore read that starts a call, under ctx: the
// caller's cancellation ends it, and so does the store timeout when ctx
// has no nearer deadline. A read that ran out of the store timeout
// matches ErrStoreTimeout.
func (c *Client) readStore(ctx context.Context, what string, fn func(context.Context) error) error {
	if c.storeNeverBlocks() {
		return fn(ctx)
	}
	timeout := c.cfg.storeTimeout
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= timeout {
		return fn(ctx) // the caller's deadline comes first
	}
	b := budgetOf(ctx)
	start := time.Now()
	until := start.Add(timeout)
	rctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	b.mu.Lock()
	b.readUntil = until
	b.mu.Unlock()
	err := fn(rctx)
	b.mu.Lock()
	b.readUntil = time.Time{}
	b.mu.Unlock()
	if err != nil && ctx.Err() == nil && errors.Is(rctx.Err(), context.DeadlineExceeded) {
		b.ended(time.Now(), c.cfg.writeGrace)
		reportWait(ctx, what, start, until, true)
		return fmt.Errorf("%w: %s did not return within %s: %w", ErrStoreTimeout, what, timeout, err)
	}
	return err
}

// getStored reads the intent with key, bounded like every read that
// starts a call (readStore).
func (c *Client) getStored(ctx context.Context, key string) (*keystore.Record, error) {
	var rec *keystore.Record
	err := c.readStore(ctx, "loading the intent", func(rctx context.Context) (err error) {
		rec, err = c.store.Get(rctx, key)
		return err
	})
	return rec, err
}
