package server

import (
	"log/slog"
	"net/http"
	"time"
)

// Bounds of the polling backoff of WithWaitForOriginal on a store that is
// not a KeyWatcher.
const (
	waitPollFirst = 10 * time.Millisecond
	waitPollMax   = 250 * time.Millisecond
)

// WithWaitForOriginal makes a duplicate that arrives while the original
// request with its key still executes wait up to d for the original's
// answer, then replay it, instead of answering 409 /in-progress at once.
// If the original is still running after d, the duplicate is answered
// 409 with Retry-After as without the option; if the original freed the
// key (a 5xx, a crash past its lease), the duplicate runs the handler
// itself, as a retry would. A KeyWatcher store (MemoryStore) wakes the
// duplicate at the original's completion; other stores are polled with a
// backoff from 10 ms to 250 ms. Each wait ends at d (or when the client
// leaves) plus at most one store call (WithStoreTimeout). Off (0) by
// default: every waiting duplicate holds a connection and a goroutine.
// A non-positive d turns it off.
func WithWaitForOriginal(d time.Duration) Option {
	return func(c *config) { c.waitOriginal = max(d, 0) }
}

// inProgress answers a request whose key's original still executes:
// 409 /in-progress, after waiting for the original when the layer is
// told to.
func (m *Middleware) inProgress(w http.ResponseWriter, r *http.Request, scope Scope, key, fingerprint string,
	body []byte, next http.Handler, rec *Record, log *slog.Logger) {
	if m.cfg.waitOriginal > 0 && m.waitForOriginal(w, r, scope, key, fingerprint, body, next, rec, log) {
		return
	}
	m.decided(r, decisionInProgress, key)
	m.cfg.answers.InProgress(w, m.cfg.inProgressRetryAfter)
}

// waitForOriginal waits, within the configured bound, for the record of
// (scope, key) to stop being another request's reservation, and answers
// as a request arriving then would be answered. It returns false, having
// answered nothing, when the original still runs at the bound.
func (m *Middleware) waitForOriginal(w http.ResponseWriter, r *http.Request, scope Scope, key, fingerprint string,
	body []byte, next http.Handler, rec *Record, log *slog.Logger) bool {
	deadline := time.Now().Add(m.cfg.waitOriginal)
	timer := time.NewTimer(m.cfg.waitOriginal)
	timer.Stop()
	poll := waitPollFirst
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		wait := min(poll, left)
		var changed <-chan struct{}
		stop := func() {}
		if m.watcher != nil {
			// Watch first, then read: a change after the read wakes us.
			changed, stop = m.watcher.WatchKey(scope, key)
			if done, ok := m.recheck(w, r, scope, key, fingerprint, body, next, &rec, log); ok {
				stop()
				return done
			}
			// Only a lease that runs out changes the record without a
			// word; wake then, or at the bound.
			wait = left
			if until := time.Until(rec.LeaseExpires); until > 0 && until < wait {
				wait = until
			}
		}
		timer.Reset(wait)
		select {
		case <-changed:
		case <-timer.C:
		case <-r.Context().Done():
			stop()
			return false // nobody reads the answer; the 409 costs nothing
		}
		timer.Stop()
		stop()
		poll = min(2*poll, waitPollMax)
		if m.watcher == nil {
			if done, ok := m.recheck(w, r, scope, key, fingerprint, body, next, &rec, log); ok {
				return done
			}
		}
	}
}

// recheck reads the key's record again and answers unless it is still
// another request's reservation. ok says it answered (done is then true).
func (m *Middleware) recheck(w http.ResponseWriter, r *http.Request, scope Scope, key, fingerprint string,
	body []byte, next http.Handler, rec **Record, log *slog.Logger) (done, ok bool) {
	ctx := newStoreContext(r.Context(), m.cfg.storeTimeout)
	res, got, err := m.store.Reserve(ctx, scope, key, fingerprint, m.cfg.lease)
	ctx.stop()
	// A freed key runs this request, as a retry would.
	if m.answerReservation(w, r, next, key, fingerprint, body, res, got, err, log) {
		return true, true
	}
	*rec = got
	return false, false
}
