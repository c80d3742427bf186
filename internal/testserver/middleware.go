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
	cfg.applyDialectDefaults()
	return &Idempotency{store: store, cfg: cfg}
}

// Lease returns how long a reservation is held before takeover.
func (m *Idempotency) Lease() time.Duration { return m.cfg.lease }

// Retention returns how long a completed key is replayed.
func (m *Idempotency) Retention() time.Duration { return m.cfg.retention }

// Dialect returns the dialect the layer speaks.
func (m *Idempotency) Dialect() Dialect { return m.cfg.dialect }

// Wrap guards next, the handler of the operation at route (its pattern,
// such as "/v1/payments"). POST and PATCH requests carry a key, in the
// dialect's header or body field (a dialect that does not require one
// lets a request without it run unguarded); every other method passes
// straight to next.
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
	key, body, ok := m.requestKey(w, r)
	if !ok {
		return
	}
	if key == "" {
		// The dialect does not require a key: the request runs as if the
		// route were not guarded, and every retry executes again.
		next.ServeHTTP(w, r)
		return
	}
	d := &m.cfg.dialect
	if d.echoKey {
		w.Header().Set(d.KeyHeader, key)
	}

	scope := Scope{Principal: principal, Method: r.Method, Route: route}
	fingerprint := Fingerprint(r.Method, route, body)
	log := m.requestLogger(r, route, key)
	res, rec, err := m.store.Reserve(r.Context(), scope, key, fingerprint, m.cfg.lease)
	switch {
	case err != nil:
		log.Warn("idempotency store unavailable; request refused", "err", err)
		d.storeUnavailable(w)
	case res != nil:
		m.execute(w, r, next, *res, body, log)
	case rec == nil:
		log.Error("idempotency store returned neither a reservation nor a record")
		d.storeUnavailable(w)
	case rec.Fingerprint != fingerprint && !d.ReplayMismatch:
		d.keyReused(w)
	case rec.State == StateCompleted:
		m.replay(w, rec, log)
	default:
		d.inProgress(w, m.cfg.inProgressRetryAfter)
	}
}

// requestKey reads the request's key and body as the dialect says. ok is
// false when it has answered (a refused key or body); an empty key with ok
// true means there is none and the dialect lets the request run
// unguarded, its body intact. A header dialect reads the key before the
// body, so a refused key costs no body read; a body-field dialect hands
// back the body without the key member.
func (m *Idempotency) requestKey(w http.ResponseWriter, r *http.Request) (key string, body []byte, ok bool) {
	d := &m.cfg.dialect
	var err error
	if d.KeyField == "" {
		parse := d.parseKey
		if parse == nil {
			parse = plainHeaderKey
		}
		key, err = parse(d, r.Header.Values(d.KeyHeader))
		if err == nil {
			body, ok = m.readGuardedBody(w, r)
			return key, body, ok
		}
	} else {
		if body, ok = m.readGuardedBody(w, r); !ok {
			return "", nil, false
		}
		var rest []byte
		if key, rest, err = bodyFieldKey(d, body); err == nil {
			return key, rest, true
		}
		r.Body = newBufferedBody(body) // for the unguarded run below
	}
	switch {
	case errors.Is(err, ErrMissingKey) && !d.RequireKey:
		return "", nil, true
	case errors.Is(err, ErrMissingKey):
		d.missingKey(w, err)
	default:
		d.invalidKey(w, err)
	}
	return "", nil, false
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
	w.WriteHeader(m.cfg.dialect.replayed(h, rec.Response.Status))
	_, _ = w.Write(rec.Response.Body)
	log.Debug("response replayed", "status", rec.Response.Status)
}

// writeStoreUnavailable answers 503: without the store no request may run.
func writeStoreUnavailable(w http.ResponseWriter) {
	WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Idempotency store unavailable",
		"the request was not executed; retry later", storeUnavailableRetryAfter)
}
