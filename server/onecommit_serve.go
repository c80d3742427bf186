package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// onceAttempts bounds how often a request tries to commit once when the
// record that took its key vanished before it could be read (released or
// swept in between).
const onceAttempts = 3

// WrapOneCommit guards next, the handler of the operation at route, in
// one-commit mode: the key's record, next's effect and its answer are one
// transaction of the store's database, committed once (OneCommitStore).
// next finds the transaction in its request's context (for pgstore,
// pgstore.OnceFrom) and makes its effect there; the answer it writes is
// committed with the effect, so after a crash both are there or neither
// is. An answer that is not final (a refusal such as 400 or 409, a 5xx
// unless WithStore5xx, a panic) rolls the effect back and leaves the key
// free. A concurrent duplicate waits in the database for the first
// transaction and is answered with its committed answer.
//
// Only a handler whose every effect is in that transaction may be
// wrapped so: an effect elsewhere (a call to another service) would not
// roll back with it. When the store cannot, WrapOneCommit returns
// ErrOneCommitUnsupported.
func (m *Middleware) WrapOneCommit(route string, next http.Handler) (http.Handler, error) {
	if m.once == nil {
		return nil, fmt.Errorf("%w: %T", ErrOneCommitUnsupported, m.rawStore)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.cfg.methods[r.Method] {
			next.ServeHTTP(w, r)
			return
		}
		m.serveOnce(w, r, route, next)
	}), nil
}

// serveOnce runs the protocol for one guarded request in one-commit mode.
func (m *Middleware) serveOnce(w http.ResponseWriter, r *http.Request, route string, next http.Handler) {
	in, ok := m.admit(w, r, route, next)
	if !ok {
		return
	}
	scope, key, body, fingerprint, log := in.scope, in.key, in.body, in.fingerprint, in.log
	req := OnceRequest{Scope: scope, Key: key, Fingerprint: fingerprint, Lease: m.cfg.lease,
		Retention: m.cfg.retention, Timeout: m.cfg.storeTimeout}
	for range onceAttempts {
		c, err := m.commitOnce(r, req, body, next, log)
		var notStored *notStoredError
		switch {
		case err == nil:
			m.decided(r, decisionExecuted, key)
			setKeyExpires(c.header, time.Now().Add(m.cfg.retention))
			writeCaptured(w, c)
			c.recycle()
			return
		case errors.As(err, &notStored):
			m.decided(r, decisionExecuted, key)
			log.Debug("answer not final; the effect rolled back and the key is free", "status", notStored.status)
			writeCaptured(w, c)
			c.recycle()
			return
		case errors.Is(err, ErrKeyTaken):
			if m.answerTaken(w, r, next, req, body, log) {
				return
			}
		case errors.Is(err, http.ErrAbortHandler):
			panic(http.ErrAbortHandler)
		case r.Context().Err() != nil:
			// The client left: the transaction rolled back with its
			// context, and a retry runs again.
			log.Debug("client gone before the commit; nothing was committed", "err", err)
			m.decided(r, decisionStoreUnavailable, key)
			m.cfg.answers.StoreUnavailable(w)
			return
		default:
			log.Warn("one-commit transaction failed; nothing was committed", "err", err)
			m.decided(r, decisionStoreUnavailable, key)
			m.cfg.answers.StoreUnavailable(w)
			return
		}
	}
	log.Warn("the key's record kept changing; answering in progress")
	m.cfg.answers.InProgress(w, m.cfg.inProgressRetryAfter)
}

// answerTaken answers a request whose key another record holds, as
// Reserve finds it: a replay, 422 or 409. It reports false when the
// record vanished meanwhile, so the caller commits once again.
func (m *Middleware) answerTaken(w http.ResponseWriter, r *http.Request, next http.Handler, req OnceRequest, body []byte, log *slog.Logger) bool {
	res, rec, err := m.reserve(r, req.Scope, req.Key, req.Fingerprint)
	if res != nil {
		// Gone between the two statements: give the key back and commit
		// once again rather than run next outside a transaction.
		ctx := m.settleContext(r)
		m.release(ctx, *res, log)
		ctx.stop()
		return false
	}
	if m.answerReservation(w, r, next, req.Key, req.Fingerprint, body, nil, rec, err, log) {
		return true
	}
	m.decided(r, decisionInProgress, req.Key)
	m.cfg.answers.InProgress(w, m.cfg.inProgressRetryAfter)
	return true
}

// commitOnce runs next inside the store's transaction and returns its
// captured answer: committed (nil), not final (a *notStoredError, rolled
// back), or with the store's error (then the capture is nil or not to
// be sent).
func (m *Middleware) commitOnce(r *http.Request, req OnceRequest, body []byte, next http.Handler, log *slog.Logger) (*captureWriter, error) {
	var capture *captureWriter
	run := func(ctx context.Context) (Response, error) {
		capture = newCaptureWriter(log)
		hr := r.WithContext(ctx)
		hr.Body = newBufferedBody(body)
		hr.ContentLength = int64(len(body))
		hr.GetBody = func() (io.ReadCloser, error) { return newBufferedBody(body), nil }
		recovered, stack := runRecovering(next, capture, hr)
		wrote := capture.close()
		switch {
		case recovered == http.ErrAbortHandler:
			return Response{}, http.ErrAbortHandler
		case recovered != nil:
			log.Error("handler panicked", "panic", fmt.Sprint(recovered), "stack", string(stack))
			capture = problemCapture(capture, "")
			return Response{}, &notStoredError{status: capture.status}
		case !wrote:
			log.Error("handler wrote no response; answering 500 and rolling back")
			capture = problemCapture(capture, "the handler wrote no response")
			return Response{}, &notStoredError{status: capture.status}
		}
		capture.finish()
		if !m.storable(capture.status) {
			return Response{}, &notStoredError{status: capture.status}
		}
		return Response{
			Status:     capture.status,
			Header:     keptHeaders(capture.header, m.cfg.storedHeaders),
			Body:       bytes.Clone(capture.body.Bytes()),
			ResourceID: capture.header.Get(ResourceIDHeader),
		}, nil
	}
	err := m.once.CommitOnce(r.Context(), req, run)
	if err != nil && capture != nil && !errors.As(err, new(*notStoredError)) {
		capture.recycle()
		capture = nil
	}
	return capture, err
}
