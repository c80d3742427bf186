package testserver

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"
)

// Headers of the idempotency protocol.
const (
	// KeyHeader carries the idempotency key of a request.
	KeyHeader = "Idempotency-Key"
	// ReplayedHeader marks an answer replayed from the store.
	ReplayedHeader = "Idempotent-Replayed"
	// ResourceIDHeader is set by a handler to name the resource it
	// created; the layer stores the id with the response and strips the
	// header before answering.
	ResourceIDHeader = "Idempotency-Resource-Id"
)

// Idempotency is the server side of the idempotency protocol, as HTTP
// middleware: it reserves the request's key before the handler runs,
// stores the handler's answer, and replays it for every retry.
type Idempotency struct {
	store    Store
	cfg      idempotencyConfig
	captures capturePool
}

// NewIdempotency returns the idempotency layer over store.
func NewIdempotency(store Store, opts ...IdempotencyOption) *Idempotency {
	cfg := defaultIdempotencyConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	return &Idempotency{store: store, cfg: cfg}
}

// Lease returns how long a reservation is held before takeover.
func (m *Idempotency) Lease() time.Duration { return m.cfg.lease }

// Retention returns how long a completed key is replayed.
func (m *Idempotency) Retention() time.Duration { return m.cfg.retention }

// Wrap guards next, the handler of the operation at route (its pattern,
// such as "/v1/payments"). POST and PATCH requests must carry an
// Idempotency-Key; every other method passes straight to next.
func (m *Idempotency) Wrap(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPatch {
			next.ServeHTTP(w, r)
			return
		}
		m.serveGuarded(w, r, route, next)
	})
}

// serveGuarded runs the protocol for one POST or PATCH request.
func (m *Idempotency) serveGuarded(w http.ResponseWriter, r *http.Request, route string, next http.Handler) {
	principal, err := Principal(r)
	if err != nil {
		w.Header().Set("WWW-Authenticate", "Bearer")
		WriteProblem(w, http.StatusUnauthorized, ProblemUnauthorized, "Unauthorized", err.Error(), 0)
		return
	}
	key, err := ParseKey(r.Header.Values(KeyHeader))
	switch {
	case errors.Is(err, ErrMissingKey):
		WriteProblem(w, http.StatusBadRequest, ProblemMissingKey, "Idempotency-Key required", err.Error(), 0)
		return
	case err != nil:
		WriteProblem(w, http.StatusBadRequest, ProblemInvalidKey, "Invalid Idempotency-Key", err.Error(), 0)
		return
	}
	body, ok := m.readGuardedBody(w, r)
	if !ok {
		return
	}

	scope := Scope{Principal: principal, Method: r.Method, Route: route}
	fingerprint := Fingerprint(r.Method, route, body)
	log := m.requestLogger(r, route, key)
	res, rec, err := m.store.Reserve(r.Context(), scope, key, fingerprint, m.cfg.lease)
	switch {
	case err != nil:
		log.Warn("idempotency store unavailable; request refused", "err", err)
		writeStoreUnavailable(w)
	case res != nil:
		m.execute(w, r, next, *res, body, log)
	case rec == nil:
		log.Error("idempotency store returned neither a reservation nor a record")
		writeStoreUnavailable(w)
	case rec.Fingerprint != fingerprint:
		WriteProblem(w, http.StatusUnprocessableEntity, ProblemKeyReused, "Idempotency-Key reused",
			"this key was already used in this scope for a different request payload", 0)
	case rec.State == StateCompleted:
		m.replay(w, rec, log)
	default:
		WriteProblem(w, http.StatusConflict, ProblemInProgress, "Request in progress",
			"a request with this key is still being processed; retry later", m.cfg.inProgressRetryAfter)
	}
}

// requestLogger is the logger of one guarded request, carrying its method,
// route and key hash. A logger that keeps nothing, even at Error, is
// returned as is: building the attributes and hashing the key on every
// request would be work thrown away.
func (m *Idempotency) requestLogger(r *http.Request, route, key string) *slog.Logger {
	if !m.cfg.logger.Enabled(r.Context(), slog.LevelError) {
		return m.cfg.logger
	}
	return m.cfg.logger.With("method", r.Method, "route", route, "key_hash", KeyHash(key))
}

// readGuardedBody reads the whole body within the size limit, answering
// 413 or 400 itself when it cannot.
func (m *Idempotency) readGuardedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, true
	}
	tooLarge := func() {
		WriteProblem(w, http.StatusRequestEntityTooLarge, ProblemBodyTooLarge, "Request body too large",
			fmt.Sprintf("the request body exceeds %d bytes", m.cfg.maxBody), 0)
	}
	if r.ContentLength > m.cfg.maxBody {
		tooLarge()
		return nil, false
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, m.cfg.maxBody), r.ContentLength)
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		tooLarge()
		return nil, false
	case err != nil:
		WriteProblem(w, http.StatusBadRequest, ProblemInvalidRequest, "Unreadable request body",
			"the request body could not be read", 0)
		return nil, false
	}
	return body, true
}

// readAll reads r to its end into a buffer sized for the declared length,
// which most requests give (-1 when unknown), so a body is read without
// regrowing its buffer; a body longer than declared still reads whole.
func readAll(r io.Reader, declared int64) ([]byte, error) {
	if declared < 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, declared+1) // +1: the read that finds EOF needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case errors.Is(err, io.EOF):
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)]
		}
	}
}

// replay answers with the stored response of a completed record.
func (m *Idempotency) replay(w http.ResponseWriter, rec *Record, log *slog.Logger) {
	if rec.Response == nil {
		log.Error("completed idempotency record has no response")
		WriteProblem(w, http.StatusInternalServerError, ProblemInternal, "Internal server error", "", 0)
		return
	}
	h := w.Header()
	for name, values := range rec.Response.Header {
		h[name] = slices.Clone(values)
	}
	h.Set(ReplayedHeader, "true")
	w.WriteHeader(rec.Response.Status)
	_, _ = w.Write(rec.Response.Body)
	log.Debug("response replayed", "status", rec.Response.Status)
}

// writeStoreUnavailable answers 503: without the store no request may run.
func writeStoreUnavailable(w http.ResponseWriter) {
	WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Idempotency store unavailable",
		"the request was not executed; retry later", storeUnavailableRetryAfter)
}
