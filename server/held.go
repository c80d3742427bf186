package server

import (
	"context"
	"sync/atomic"
	"time"
)

// Held is the reservation the idempotency layer holds for the request
// being handled (HeldFrom). A handler whose effect lives in the same
// database as the keys commits the two together: it passes Completion(resp)
// to the store's transactional hook (pgstore.Store.CompleteTx inside its
// own transaction, redisstore.Store.CommitEffect, MemoryStore.CompleteFunc),
// answers resp, then calls MarkCompleted so the layer does not complete the key a second time. A
// crash then keeps both the effect and its answer, or neither.
//
// The transaction that commits the effect is bounded by the layer's store
// timeout (StoreTimeout, WithStoreTimeout): the completion carries it
// (Completion.Timeout), pgstore's CompleteBatch bounds its transaction by
// it, and a transaction begun by the handler for CompleteTx is begun
// under Context. When it runs out the transaction rolls back, and the
// handler answers 503 with Retry-After (the layer then releases the
// key): the effect did not commit, and a retry runs again.
type Held struct {
	Reservation Reservation
	Retention   time.Duration
	// StoreTimeout bounds the transaction that commits the effect with
	// the key (zero: unbounded).
	StoreTimeout time.Duration
	completed    atomic.Bool
	notExecuted  atomic.Bool
	// downstreamSecret is the layer's WithDownstreamSecret
	// (DownstreamKey), nil without one.
	downstreamSecret []byte
}

// Completion returns the completion that stores resp for this
// reservation, bounded by the store timeout.
func (h *Held) Completion(resp Response) *Completion {
	return &Completion{Reservation: h.Reservation, Response: resp, Retention: h.Retention, Timeout: h.StoreTimeout}
}

// Context returns parent ended after the store timeout, for the
// transaction that commits the effect with the key (CompleteTx): begin
// it under this context, and call cancel once it ended. Without a store
// timeout it is parent.
func (h *Held) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if h.StoreTimeout <= 0 {
		return context.WithCancel(parent)
	}
	return context.WithTimeout(parent, h.StoreTimeout)
}

// MarkCompleted records that the handler completed the key itself.
func (h *Held) MarkCompleted() { h.completed.Store(true) }

// MarkNotExecuted records that the handler ran nothing for this request
// and left nothing running, so whatever it answers is not stored and the
// key is freed at once for a retry. Without it a 503 keeps the key
// reserved until its lease ends, since the layer cannot tell a 503 that
// ran nothing from one written by a timeout (http.TimeoutHandler) below
// it while the handler goes on.
func (h *Held) MarkNotExecuted() { h.notExecuted.Store(true) }

// Completed reports whether the handler completed the key itself.
func (h *Held) Completed() bool { return h.completed.Load() }

type heldKey struct{}

// WithHeld returns ctx carrying h.
func WithHeld(ctx context.Context, h *Held) context.Context {
	return context.WithValue(ctx, heldKey{}, h)
}

// HeldFrom returns the reservation the idempotency layer holds for this
// request, if any.
func HeldFrom(ctx context.Context) (*Held, bool) {
	h, ok := ctx.Value(heldKey{}).(*Held)
	return h, ok
}
