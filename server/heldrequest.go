package server

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// heldRequest is what execute hands the handler, in one allocation
// instead of four: the held key, the context that carries it, the reader
// of the body the layer has read and the writer that captures the answer,
// with the context the layer settles the key under once the handler
// returned. Like everything handed to the handler, it belongs to one
// request and is never reused.
type heldRequest struct {
	held      Held
	ctx       heldContext
	body      bufferedBody
	raw       []byte
	capture   captureWriter
	settleCtx storeContext
}

// newHeldRequest returns the request's held parts; lateLog is told of a
// write into the capture after the handler returned.
func newHeldRequest(parent context.Context, res Reservation, retention, storeTimeout time.Duration, body []byte, lateLog *slog.Logger) *heldRequest {
	h := &heldRequest{held: Held{Reservation: res, Retention: retention, StoreTimeout: storeTimeout}, raw: body}
	h.capture.init(lateLog)
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
