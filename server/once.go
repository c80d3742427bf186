package server

import (
	"context"
	"errors"
	"fmt"
)

// Errors Once returns when fn did not run. A message consumer leaves the
// message for redelivery on ErrInProgress and dead-letters it on
// ErrKeyReused.
var (
	// ErrInProgress means another consumer holds the id and its lease has
	// not ended: it may still be running fn.
	ErrInProgress = errors.New("server: this id is being processed")
	// ErrKeyReused means the id was first seen with another fingerprint:
	// two different messages share one id.
	ErrKeyReused = errors.New("server: this id was used for another payload")
)

// Once runs fn at most once to completion for the message or event id in
// scope, under the same store, leases and fencing as the HTTP layer: the
// idempotent consumer of a queue that delivers at least once. The first
// call reserves (scope, id) and runs fn; its result is stored and every
// later call with the same id and fingerprint returns it without running
// fn. fingerprint names the payload (Fingerprint of the message body, for
// instance): the same id with another one is ErrKeyReused.
//
// When fn fails or panics the id is released and the error returned, so a
// redelivery runs fn again. A store that cannot be reached is returned as
// is and nothing runs. fn's ctx carries the reservation (HeldFrom), so fn
// can commit its effect with the completion through a store's
// transactional hook, then call Held.MarkCompleted. If the lease ends
// before fn returns and another consumer takes the id over, storing the
// result fails with ErrFenced: the newer consumer's result stands. Each
// store call is bounded by WithStoreTimeout (default 3 s): a store that
// has not answered by then is a *StoreTimeoutError (ErrStoreTimeout).
// Only WithLease, WithRetention, WithStoreTimeout, WithDownstreamSecret
// (for Held.DownstreamKey), WithTracerProvider and WithMeterProvider of
// opts apply.
func Once(ctx context.Context, store Store, scope Scope, id, fingerprint string, fn func(ctx context.Context) ([]byte, error), opts ...Option) ([]byte, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if cfg.tel.enabled() {
		return cfg.tel.once(ctx, store, scope, id, fingerprint, fn, opts) // telemetry_store.go
	}
	var res *Reservation
	var rec *Record
	err := storeCall(ctx, "reserve", cfg.storeTimeout, func(ctx context.Context) (err error) {
		res, rec, err = store.Reserve(ctx, scope, id, fingerprint, cfg.lease)
		return err
	})
	switch {
	case err != nil:
		return nil, err
	case res != nil:
		return runOnce(ctx, store, cfg, *res, fn)
	case rec == nil:
		return nil, errors.New("server: store returned neither a reservation nor a record")
	case rec.Fingerprint != fingerprint:
		return nil, ErrKeyReused
	case rec.State != StateCompleted:
		return nil, ErrInProgress
	case rec.Response == nil:
		return nil, errors.New("server: completed record has no result")
	default:
		return rec.Response.Body, nil
	}
}

// runOnce runs fn under res and settles the id: completed with the
// result, or released on an error or a panic.
func runOnce(ctx context.Context, store Store, cfg config, res Reservation, fn func(context.Context) ([]byte, error)) (result []byte, err error) {
	held := &Held{Reservation: res, Retention: cfg.retention, StoreTimeout: cfg.storeTimeout, downstreamSecret: cfg.downstreamSecret}
	// The id is settled even when ctx ends: fn ran, and its outcome must
	// not be lost with the caller's deadline. Never beyond the lease,
	// after which the id is another's anyway.
	sctx := context.WithoutCancel(ctx)
	timeout := min(cfg.lease, cfg.storeTimeout)
	release := func() error {
		return storeCall(sctx, "release", timeout, func(ctx context.Context) error { return store.Release(ctx, res) })
	}
	defer func() {
		if p := recover(); p != nil {
			if !held.Completed() {
				_ = release()
			}
			panic(p)
		}
	}()
	result, err = fn(WithHeld(ctx, held))
	if held.Completed() {
		return result, err
	}
	if err != nil {
		if rerr := release(); rerr != nil && !errors.Is(rerr, ErrFenced) {
			return nil, errors.Join(err, fmt.Errorf("server: release the id: %w", rerr))
		}
		return nil, err
	}
	c := Completion{Reservation: res, Response: Response{Status: 200, Body: result}, Retention: cfg.retention}
	if err := storeCall(sctx, "complete", timeout, func(ctx context.Context) error { return store.Complete(ctx, c) }); err != nil {
		return nil, fmt.Errorf("server: store the result: %w", err)
	}
	return result, nil
}
