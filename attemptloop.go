package idem

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"time"
)

// sendState is one call's state across its attempts, in one allocation:
// the call, the result and retry policy, and the first attempt's body
// reader.
type sendState struct {
	call   call
	policy attemptPolicy
	// firstBody reads the body of the first attempt; every later attempt
	// gets a reader of its own, as the transport may still be reading an
	// earlier one. A *bytes.Reader under io.NopCloser, which net/http
	// knows to be in memory: it then writes the header and the body with
	// one write, where a body of another type costs a flush of its own.
	firstBody bytes.Reader
}

// send runs the attempts of cl with the client's retry policy: check
// decides after every attempt (outcome, budget, Retry-After, deadline)
// and computes the wait, which is slept here, bounded by ctx. A retried
// answer is kept in memory for the give-up of a call whose context ends
// during that wait.
func (c *Client) send(ctx context.Context, template *call) *sendResult {
	// A copy of the call lives with the state, so the caller's need not
	// escape to the heap.
	st := &sendState{call: *template}
	cl := &st.call
	st.policy = attemptPolicy{c: c, cl: cl}
	p, res := &st.policy, &st.policy.res
	req := cl.req
	if !cl.ownHeader || req.Context() != ctx {
		req = cl.req.WithContext(ctx) // a caller's template stays as it was
	}
	if err := withinRetention(ctx, cl, c.cfg.now(), 0); err != nil {
		res.stop = err
		return res
	}
	if err := c.prepareAttempt(ctx, req, cl, true); err != nil {
		res.stop = err
		return res
	}
	if len(cl.body) > 0 {
		// Redirects (307, 308) get the body again from GetBody, which the
		// copies of later attempts inherit; unreplayable hides it from
		// the Transport.
		body := cl.body
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		st.firstBody.Reset(body)
		req.Body = io.NopCloser(&st.firstBody)
	} else {
		req.Body = nil
		req.GetBody = noBody
	}
	req.ContentLength = int64(len(cl.body))
	c.tel.startAttempt(ctx, p, req)
	for {
		resp, doErr := cl.client.Do(req)
		// The error names the URL, secrets and all: from here on (logs,
		// LastError, the give-up) it is told without them.
		doErr = redactError(doErr, req.URL, c.cfg.secretParams)
		// Judged with the attempt's context, which telemetry makes the
		// attempt span's: the metrics it records refer to that span.
		retry, checkErr := c.tel.judge(req.Context(), p, resp, doErr)
		if !retry {
			return st.finish(ctx, resp, doErr, checkErr)
		}
		if res.attempts >= c.cfg.maxAttempts {
			// check never asks for more (it stops first), but the loop
			// bounds the attempts by itself too.
			res.stop = ErrRetriesExhausted
			return st.finish(ctx, resp, doErr, res.stop)
		}
		if doErr == nil && resp != nil {
			drainRetried(resp.Body)
		}
		if !sleep(ctx, p.wait) {
			// The context ended during the wait: the answer kept before
			// it comes back with the give-up.
			res.stop = ctx.Err()
			res.resp = p.kept
			return res
		}
		// The adaptive budget takes the retry's token now, waiting for
		// one when it has none (bounded by ctx and its own limit).
		if err := budgetAcquire(ctx, c.cfg.budget, c.cfg.now); err != nil {
			// Refused after the wait: the answer kept before it comes
			// back with the give-up.
			res.stop = err
			res.resp = p.kept
			return res
		}
		// The waits (backoff, the budget's token) may have taken the
		// intent nearer the end of its key's retention.
		if err := withinRetention(ctx, cl, c.cfg.now(), 0); err != nil {
			res.stop = err
			res.resp = p.kept
			return res
		}
		// A shallow copy: the Transport's write loop may still hold the
		// previous attempt's request, body and header.
		next := req.WithContext(ctx)
		if err := c.prepareAttempt(ctx, next, cl, false); err != nil {
			if resp != nil {
				resp.Body.Close()
			}
			res.stop = err
			return res
		}
		if len(cl.body) > 0 {
			next.Body = io.NopCloser(bytes.NewReader(cl.body))
		}
		c.tel.startAttempt(ctx, p, next)
		req = next
	}
}

// finish is the result of a call whose policy stopped after an attempt
// that answered resp (or failed with doErr); checkErr is the policy's
// reason to give up, nil for a final answer.
func (st *sendState) finish(ctx context.Context, resp *http.Response, doErr, checkErr error) *sendResult {
	res := &st.policy.res
	res.resp = resp
	if doErr == nil || checkErr != nil {
		// A final answer, body unread; or a give-up (res.stop set by the
		// policy) with the last answer, body intact.
		return res
	}
	// A transport error the policy took as final without a reason (a
	// redirect the http.Client refused): the give-up carries that error,
	// and the answer kept from an earlier attempt, if any.
	if resp != nil {
		resp.Body.Close()
	}
	res.stop = doErr
	if ctxErr := ctx.Err(); ctxErr != nil {
		res.stop = ctxErr
	}
	res.resp = st.policy.kept
	return res
}

// noBody is GetBody of an attempt without a body.
func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// retriedDrainLimit bounds what is read of a retried answer's body
// before it is closed; check has already read it into memory.
const retriedDrainLimit = 4096

// drainRetried reads what is left of a retried answer's body and closes
// it, so its connection goes back to the pool.
func drainRetried(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(body, retriedDrainLimit))
	body.Close()
}

// sleep waits for d, or until ctx ends; it reports whether the wait ran
// its course with ctx still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}
