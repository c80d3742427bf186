package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/idemkit/idem/internal/bodyread"
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

// Middleware is the server side of the idempotency protocol, as HTTP
// middleware: it reserves the request's key before the handler runs,
// stores the handler's answer, and replays it for every retry.
type Middleware struct {
	store   Store
	cfg     config
	watcher KeyWatcher // the store's, if it is one (WithWaitForOriginal)
	// once is the store as a OneCommitStore, if it is one (WrapOneCommit);
	// rawStore the store as given, to name it when it is not.
	once     OneCommitStore
	rawStore Store
}

// New returns the idempotency layer over store. It needs a principal
// choice, WithPrincipal or WithAnonymous, which scopes every key; without
// one it returns ErrNoPrincipal, which lists the helpers. A lease shorter
// than MinLease of the store timeout is refused with a *LeaseTooShortError.
func New(store Store, opts ...Option) (*Middleware, error) {
	if store == nil {
		return nil, errors.New("server: New needs a store")
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if err := checkPrincipalChoice(&cfg); err != nil {
		return nil, err
	}
	if err := CheckLease(cfg.lease, cfg.storeTimeout); err != nil {
		return nil, err
	}
	if err := checkDownstreamSecret(&cfg); err != nil {
		return nil, err
	}
	cfg.jsonTokens = JSONTokenLimit(cfg.maxBody)
	watcher, _ := store.(KeyWatcher)
	once, _ := store.(OneCommitStore)
	return &Middleware{store: cfg.tel.wrapStore(store), cfg: cfg, watcher: watcher, once: once, rawStore: store}, nil
}

// Lease returns how long a reservation is held before takeover.
func (m *Middleware) Lease() time.Duration { return m.cfg.lease }

// Retention returns how long a completed key is replayed.
func (m *Middleware) Retention() time.Duration { return m.cfg.retention }

// Wrap guards next, the handler of the operation at route (its pattern,
// such as "/v1/payments", which is part of every key's scope). Requests
// with a guarded method (WithMethods) carry a key; every other method
// passes straight to next.
func (m *Middleware) Wrap(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.cfg.methods[r.Method] {
			next.ServeHTTP(w, r)
			return
		}
		m.serveGuarded(w, r, route, next)
	})
}

// Handler guards every route of next, a mux: the route part of a key's
// scope is the pattern the request matched when next is an
// *http.ServeMux, else its URL path. Wrap one route at a time to guard
// only some.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	mux, _ := next.(*http.ServeMux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !m.cfg.methods[r.Method] {
			next.ServeHTTP(w, r)
			return
		}
		route := r.URL.Path
		if mux != nil {
			if _, pattern := mux.Handler(r); pattern != "" {
				route = pattern
			}
		}
		m.serveGuarded(w, r, route, next)
	})
}

// serveGuarded runs the protocol for one guarded request, observed when
// the layer has telemetry (telemetry.go).
func (m *Middleware) serveGuarded(w http.ResponseWriter, r *http.Request, route string, next http.Handler) {
	if m.cfg.tel.enabled() {
		m.cfg.tel.serve(m, w, r, route, next)
		return
	}
	m.serveProtocol(w, r, route, next)
}

// serveProtocol runs the protocol for one guarded request.
func (m *Middleware) serveProtocol(w http.ResponseWriter, r *http.Request, route string, next http.Handler) {
	in, ok := m.admit(w, r, route, next)
	if !ok {
		return
	}
	scope, key, body, fingerprint, log := in.scope, in.key, in.body, in.fingerprint, in.log
	res, rec, err := m.reserve(r, scope, key, fingerprint)
	if rec != nil && rec.Fingerprint != fingerprint && legacyFingerprint(rec.Fingerprint) &&
		rec.Fingerprint == fingerprintBeforeTarget(r.Method, route, body) {
		// Stored before the request target was fingerprinted: its
		// retries within the retention are answered as they were.
		fingerprint = rec.Fingerprint
		if rec.State != StateCompleted {
			// An expired lease is taken over only by its own fingerprint.
			res, rec, err = m.reserve(r, scope, key, fingerprint)
		}
	}
	if m.answerReservation(w, r, next, key, fingerprint, body, res, rec, err, log) {
		return
	}
	m.inProgress(w, r, scope, key, fingerprint, body, next, rec, log)
}

// answerReservation answers what a Reserve of key under fingerprint came
// to (res, rec, err) and reports that it did; it answers nothing, and
// reports false, when rec is another request's live reservation, which
// the caller answers as in progress.
func (m *Middleware) answerReservation(w http.ResponseWriter, r *http.Request, next http.Handler, key, fingerprint string,
	body []byte, res *Reservation, rec *Record, err error, log *slog.Logger) bool {
	ans := m.cfg.answers
	switch {
	case errors.Is(err, ErrStoreFull):
		log.Warn("idempotency store full; new key refused", "err", err)
		m.decided(r, decisionStoreUnavailable, key)
		m.answerStoreFull(w, err)
	case err != nil:
		log.Warn("idempotency store unavailable; request refused", "err", err)
		m.decided(r, decisionStoreUnavailable, key)
		ans.StoreUnavailable(w)
	case res != nil:
		m.decided(r, decisionExecuted, key)
		m.execute(w, r, next, *res, body, log)
	case rec == nil:
		log.Error("idempotency store returned neither a reservation nor a record")
		m.decided(r, decisionStoreUnavailable, key)
		ans.StoreUnavailable(w)
	case rec.Fingerprint != fingerprint && !m.cfg.replayMismatch:
		m.decided(r, decisionKeyReused, key)
		ans.KeyReused(w)
	case rec.State == StateCompleted:
		m.decidedReplay(r, key, rec.Fingerprint != fingerprint)
		m.replay(w, rec, log)
	default:
		return false
	}
	return true
}

// reserve asks the store for (scope, key) under fingerprint, within the
// store timeout.
func (m *Middleware) reserve(r *http.Request, scope Scope, key, fingerprint string) (*Reservation, *Record, error) {
	ctx := newStoreContext(r.Context(), m.cfg.storeTimeout)
	defer ctx.stop()
	return m.store.Reserve(ctx, scope, key, fingerprint, m.cfg.lease)
}

// answerStoreFull answers a new key a full store refused, with the
// Retry-After the store gave when the answers can say it.
func (m *Middleware) answerStoreFull(w http.ResponseWriter, err error) {
	full, ok := m.cfg.answers.(StoreFullAnswers)
	if !ok {
		m.cfg.answers.StoreUnavailable(w)
		return
	}
	retryAfter := storeUnavailableRetryAfter
	var sf *StoreFullError
	if errors.As(err, &sf) && sf.RetryAfter > 0 {
		retryAfter = sf.RetryAfter
	}
	full.StoreFull(w, retryAfter)
}

// requestKey reads the request's key and body. ok is false when it has
// answered (a refused key or body); an empty key with ok true means there
// is none and the key is optional, the body intact. A header key is read
// before the body, so a refused key costs no body read; a body key hands
// back the body without it.
func (m *Middleware) requestKey(w http.ResponseWriter, r *http.Request) (key string, body []byte, ok bool) {
	src := &m.cfg.key
	var err error
	if src.splitBody == nil {
		key, err = src.parseHeader(r.Header.Values(src.header))
		if err == nil {
			body, ok = m.readGuardedBody(w, r)
			return key, body, ok
		}
	} else {
		if body, ok = m.readGuardedBody(w, r); !ok {
			return "", nil, false
		}
		var rest []byte
		if key, rest, err = src.splitBody(body); err == nil {
			return key, rest, true
		}
		r.Body = newBufferedBody(body) // for the unguarded run below
	}
	switch {
	case errors.Is(err, ErrMissingKey) && !src.required:
		return "", nil, true
	case errors.Is(err, ErrMissingKey):
		m.cfg.answers.MissingKey(w, err)
	default:
		m.cfg.answers.InvalidKey(w, err)
	}
	return "", nil, false
}

// requestLogger is the logger of one guarded request, carrying its method,
// route and key hash. A logger that keeps nothing, even at Error, is
// returned as is: building the attributes and hashing the key on every
// request would be work thrown away.
func (m *Middleware) requestLogger(r *http.Request, route, key string) *slog.Logger {
	if !m.cfg.logger.Enabled(r.Context(), slog.LevelError) {
		return m.cfg.logger
	}
	return m.cfg.logger.With("method", r.Method, "route", route, "key_hash", KeyHash(key))
}

// readGuardedBody reads the whole body within the size limit, answering
// 413 or 400 itself when it cannot.
func (m *Middleware) readGuardedBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
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
	body, err := bodyread.Sized(http.MaxBytesReader(w, r.Body, m.cfg.maxBody), r.ContentLength, m.cfg.maxBody)
	if err == nil {
		return body, true
	}
	// Declared only here: errors.As takes its address, which puts it on
	// the heap, and a body read without error should not pay for that.
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		tooLarge()
		return nil, false
	}
	WriteProblem(w, http.StatusBadRequest, ProblemInvalidRequest, "Unreadable request body",
		"the request body could not be read", 0)
	return nil, false
}

// replay answers with the stored response of a completed record.
func (m *Middleware) replay(w http.ResponseWriter, rec *Record, log *slog.Logger) {
	if rec.Response == nil {
		log.Error("completed idempotency record has no response")
		WriteProblem(w, http.StatusInternalServerError, ProblemInternal, "Internal server error", "", 0)
		return
	}
	h := w.Header()
	for name, values := range rec.Response.Header {
		h[name] = slices.Clone(values)
	}
	setKeyExpires(h, rec.ExpiresAt)
	w.WriteHeader(m.cfg.answers.Replayed(h, rec.Response.Status))
	_, _ = w.Write(rec.Response.Body)
	log.Debug("response replayed", "status", rec.Response.Status)
}

// admitted is a guarded request past the checks every mode makes first:
// its caller, key, body and fingerprint.
type admitted struct {
	scope       Scope
	key         string
	body        []byte
	fingerprint string
	log         *slog.Logger
}

// admit takes a guarded request through what every mode does before the
// store: the principal, the key (a request without one runs unguarded),
// the key's echo, the JSON body's bounds, the scope and the fingerprint.
// ok is false when the request has been answered (or run unguarded).
func (m *Middleware) admit(w http.ResponseWriter, r *http.Request, route string, next http.Handler) (admitted, bool) {
	principal, ok := m.principalOf(w, r)
	if !ok {
		return admitted{}, false
	}
	key, body, ok := m.requestKey(w, r)
	if !ok {
		return admitted{}, false
	}
	if key == "" {
		// The key is optional: the request runs as if the route were not
		// guarded, and every retry executes again.
		m.decided(r, decisionUnkeyed, "")
		next.ServeHTTP(w, r)
		return admitted{}, false
	}
	if m.cfg.key.echo {
		w.Header().Set(m.cfg.key.header, echoValue(key))
	}
	jsonOK, scanned := checkJSONBody(w, r, body, m.cfg.jsonTokens)
	if !jsonOK {
		return admitted{}, false
	}
	scope := Scope{Principal: principal, Method: r.Method, Route: route}
	return admitted{
		scope:       scope,
		key:         key,
		body:        body,
		fingerprint: requestFingerprintScanned(r.Method, route, r.URL.EscapedPath(), r.URL.RawQuery, body, m.cfg.jsonTokens, scanned),
		log:         m.requestLogger(r, route, key),
	}, true
}
