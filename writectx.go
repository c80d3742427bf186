package idem

import (
	"context"
	"time"
)

// DefaultWriteGrace bounds a keystore write that records what a call
// learnt (an answer, the attempts, a verdict) after the call's context
// has ended: the write is still made, since losing it would send the
// intent again, but Do returns at most this long after its deadline
// whatever the keystore does. A write cut short leaves the intent
// Pending, and its resume gets the server's replay.
const DefaultWriteGrace = 2 * time.Second

// writeContext is the context of such a write: ctx's values without its
// cancellation, bounded by the write grace from now or from ctx's
// deadline, whichever is later.
func (c *Client) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	limit := time.Now().Add(c.cfg.writeGrace)
	if d, ok := ctx.Deadline(); ok && d.Add(c.cfg.writeGrace).After(limit) {
		limit = d.Add(c.cfg.writeGrace)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), limit)
}
