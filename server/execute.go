package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// execute runs next under the reservation, settles the key and answers
// with the handler's response.
func (m *Middleware) execute(w http.ResponseWriter, r *http.Request, next http.Handler, res Reservation, body []byte, log *slog.Logger) {
	hr := newHeldRequest(r.Context(), res, m.cfg.retention, m.cfg.storeTimeout, body, log)
	held := &hr.held
	held.downstreamSecret = m.cfg.downstreamSecret
	req := r.WithContext(&hr.ctx)
	req.Body = &hr.body
	req.ContentLength = int64(len(body))
	req.GetBody = hr.getBody

	capture := &hr.capture
	recovered, stack := runRecovering(next, capture, req)
	wrote := capture.close()

	if recovered == http.ErrAbortHandler {
		// The handler asked net/http to abort the response: there is no
		// answer to store, so free the key and keep the abort.
		log.Debug("handler aborted the response")
		if !held.Completed() {
			ctx := m.settleContext(r)
			defer ctx.stop()
			m.release(ctx, res, log)
		}
		panic(http.ErrAbortHandler)
	}
	release := false
	switch {
	case recovered != nil:
		log.Error("handler panicked", "panic", fmt.Sprint(recovered), "stack", string(stack))
		capture = problemCapture(capture, "")
	case !wrote && !held.Completed():
		// An empty 200 stored here would be replayed for the whole
		// retention, though the handler may have meant an error it left
		// for code above the layer to write (echo's error handler), too
		// late to be captured.
		log.Error("handler wrote no response; answering 500 and releasing the key")
		capture = problemCapture(capture, "the handler wrote no response")
		release = true
	case !wrote:
		capture.writeHeaderLocked(http.StatusOK) // completed by the handler (Held): as net/http would answer
	}
	defer capture.recycle()
	capture.finish()
	if held.Completed() {
		// The handler stored this answer with its effect (Held.Completion):
		// it is kept for the retention like one the layer stored.
		setKeyExpires(capture.header, time.Now().Add(m.cfg.retention))
	} else if m.settleCaptured(r, capture, hr, release, log) {
		// A newer request took the key over: this answer is not the
		// key's. The retry the 409 asks for gets the stored one.
		m.cfg.answers.InProgress(w, m.cfg.inProgressRetryAfter)
		return
	}
	writeCaptured(w, capture)
}

// settleCaptured settles the key of the handler's captured answer c:
// released (release, or a handler that ran nothing), kept (a 503 while
// the client waits), or stored when storable. fenced reports that a newer
// request owns the key, so c is not its answer.
func (m *Middleware) settleCaptured(r *http.Request, c *captureWriter, hr *heldRequest, release bool, log *slog.Logger) (fenced bool) {
	held := &hr.held
	ctx := &hr.settleCtx
	m.initSettleContext(ctx, r)
	defer ctx.stop()
	switch {
	case release, held.notExecuted.Load():
		m.release(ctx, held.Reservation, log)
	case c.status == http.StatusServiceUnavailable && r.Context().Err() == nil:
		// Neither stored nor released: a 503 from below the layer while
		// the client still waits may be http.TimeoutHandler's, whose
		// handler goroutine the layer cannot see and which may still be
		// running. Freed now, a retry would run the handler a second
		// time. (When the client has gone, the handler's context ended
		// too, and the key is freed as before.)
		log.Warn("handler answered 503; keeping the key reserved until its lease ends, since a timeout below the layer may have left the handler running; a handler that ran nothing calls Held.MarkNotExecuted")
		settled(ctx, "kept", nil)
	default:
		return m.settle(ctx, c, held.Reservation, log)
	}
	return false
}

// problemCapture replaces c, recycling it, by a closed capture holding a
// 500 /internal problem with detail.
func problemCapture(c *captureWriter, detail string) *captureWriter {
	c.recycle()
	p := newCaptureWriter(nil)
	WriteProblem(p, http.StatusInternalServerError, ProblemInternal, "Internal server error", detail, 0)
	p.close()
	return p
}

// settleContext bounds settling a key by the store timeout, and never
// beyond the lease, after which the key is another's anyway. The key is settled
// even when the client has gone away: the handler ran, and its outcome
// must not be lost with the connection.
func (m *Middleware) settleContext(r *http.Request) *storeContext {
	c := new(storeContext)
	m.initSettleContext(c, r)
	return c
}

// initSettleContext makes c, unused until now, what settleContext returns,
// so a context held in a larger allocation costs none of its own.
func (m *Middleware) initSettleContext(c *storeContext, r *http.Request) {
	c.parent = context.WithoutCancel(r.Context())
	c.deadline = time.Now().Add(min(m.cfg.lease, m.cfg.storeTimeout))
}

// bufferedBody hands the handler the request body the layer has read.
type bufferedBody struct{ bytes.Reader }

func newBufferedBody(body []byte) *bufferedBody {
	b := new(bufferedBody)
	b.Reset(body)
	return b
}

// Close implements io.Closer; there is nothing to release.
func (*bufferedBody) Close() error { return nil }

// runRecovering runs h and returns the value of a panic, with its stack.
func runRecovering(h http.Handler, w http.ResponseWriter, r *http.Request) (recovered any, stack []byte) {
	defer func() {
		if recovered = recover(); recovered != nil {
			stack = debug.Stack()
		}
	}()
	h.ServeHTTP(w, r)
	return nil, nil
}

// settle stores the captured response as the key's final answer, or
// releases the key so a retry runs the handler again. fenced reports that
// a newer request owns the key, so the captured answer is not its answer.
// Each line it logs names the status itself: a logger made With it would
// cost two allocations on every request, logged or not.
func (m *Middleware) settle(ctx context.Context, c *captureWriter, res Reservation, log *slog.Logger) (fenced bool) {
	if !m.storable(c.status) {
		m.release(ctx, res, log.With("status", c.status))
		return false
	}
	resp := Response{
		Status:     c.status,
		Header:     keptHeaders(c.header, m.cfg.storedHeaders),
		Body:       bytes.Clone(c.body.Bytes()),
		ResourceID: c.header.Get(ResourceIDHeader),
	}
	err := m.store.Complete(ctx, Completion{Reservation: res, Response: resp, Retention: m.cfg.retention})
	switch {
	case errors.Is(err, ErrFenced):
		// This request's lease ended before its answer was stored: the
		// key was taken over by a retry (which may still be running, or
		// may have been released) or removed. The answer is neither
		// stored nor sent as final: the client is told the key is in
		// progress, and its retry gets the key's answer if another
		// request stored one, or runs the handler again.
		log.Warn("lease lost: the key was taken over or removed after this request's lease ended; "+
			"this answer is not stored and the client is answered 409 in progress: make the lease outlast the handler", "status", c.status)
		return true
	case err != nil:
		// Nothing more can be done here: the key stays reserved until its
		// lease expires, then a retry with the same payload takes it over.
		log.Error("could not store the response; the key stays reserved until its lease expires", "status", c.status, "err", err)
	default:
		setKeyExpires(c.header, time.Now().Add(m.cfg.retention))
		log.Debug("response stored", "status", c.status)
	}
	return false
}

// release frees the key so a retry runs the handler again.
func (m *Middleware) release(ctx context.Context, res Reservation, log *slog.Logger) {
	err := m.store.Release(ctx, res)
	switch {
	case errors.Is(err, ErrFenced):
		log.Warn("lease lost before the key was released: it was taken over or removed after this request's lease ended; nothing to release")
	case err != nil:
		log.Error("could not release the key; it stays reserved until its lease expires", "err", err)
	default:
		log.Debug("key released")
	}
}

// storable reports whether an answer with status is final and stored.
// 4xx answers that mean the request was refused before it executed leave
// the key free, so a corrected retry is not answered from the store. So
// does 503, even with store5xx: it says the server could not take the
// request on (RFC 9110 §15.6.4), and stored it would tell every retry to
// retry again until the retention ends. (execute keeps the key of a 503
// reserved while the client waits; this answers for the rest.)
func (m *Middleware) storable(status int) bool {
	switch {
	case status == http.StatusServiceUnavailable:
		return false
	case status >= 500:
		return m.cfg.store5xx
	case status >= 400:
		return !refusedBeforeExecution(status)
	default:
		return true
	}
}

// refusedBeforeExecution reports whether a 4xx status means the handler
// refused the request without acting on it.
func refusedBeforeExecution(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusMethodNotAllowed, http.StatusRequestTimeout, http.StatusConflict,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType,
		http.StatusUnprocessableEntity, http.StatusTooEarly, http.StatusTooManyRequests:
		return true
	}
	return false
}

// keptHeaders returns the headers of h named in names, for replays.
func keptHeaders(h http.Header, names []string) http.Header {
	kept := make(http.Header, len(names))
	n := 0
	for _, name := range names {
		n += len(h[name])
	}
	// The values of every kept name share one copy; each name's slice is
	// capped, so appending to one cannot overwrite the next.
	all := make([]string, 0, n)
	for _, name := range names {
		if values, ok := h[name]; ok && name != ResourceIDHeader {
			if values == nil {
				kept[name] = nil
				continue
			}
			start := len(all)
			all = append(all, values...)
			kept[name] = all[start:len(all):len(all)]
		}
	}
	return kept
}

// writeCaptured sends the captured response, without the resource id
// header, which is for the layer only.
func writeCaptured(w http.ResponseWriter, c *captureWriter) {
	h := w.Header()
	for name, values := range c.header {
		if name != ResourceIDHeader {
			h[name] = values
		}
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body.Bytes())
}
