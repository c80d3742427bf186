package server

import (
	"context"
	"io"
	"time"
)

// heldRequest is what execute hands the handler, in one allocation
// instead of three: the held key, the context that carries it and the
// reader of the body the layer has read.
type heldRequest struct {
	held Held
	ctx  heldContext
	body bufferedBody
	raw  []byte
}

func newHeldRequest(parent context.Context, res Reservation, retention, storeTimeout time.Duration, body []byte) *heldRequest {
	h := &heldRequest{held: Held{Reservation: res, Retention: retention, StoreTimeout: storeTimeout}, raw: body}
	h.ctx = heldContext{Context: parent, held: &h.held}
	h.body.Reset(body)
	return h
}

// getBody is the request's GetBody: a new reader of the same bytes.
func (h *heldRequest) getBody() (io.ReadCloser, error) { return newBufferedBody(h.raw), nil }

// heldContext is WithHeld's context without an allocation of its own:
// it answers HeldFrom's key with held and every other key, cancellation
// included, from its parent.
type heldContext struct {
	context.Context
	held *Held
}

// Value implements context.Context.
func (c *heldContext) Value(key any) any {
	if _, ok := key.(heldKey); ok {
		return c.held
	}
	return c.Context.Value(key)
}
