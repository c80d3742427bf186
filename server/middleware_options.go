package server

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults of the idempotency layer. The retention is part of the
// protocol: clients are configured with the same figure.
const (
	// DefaultLease is how long a reservation is held before another
	// request with the same key may take it over.
	DefaultLease = 30 * time.Second
	// DefaultRetention is how long a completed key is replayed.
	DefaultRetention = 24 * time.Hour
	// DefaultMaxBody is the largest request body the layer reads.
	DefaultMaxBody = 1 << 20
	// DefaultInProgressRetryAfter is the Retry-After sent with 409
	// /in-progress.
	DefaultInProgressRetryAfter = time.Second
	// DefaultStoreTimeout bounds every store operation the layer makes,
	// so a stalled store answers 503 instead of holding requests.
	DefaultStoreTimeout = 3 * time.Second
	// storeUnavailableRetryAfter is the Retry-After sent with 503
	// /store-unavailable.
	storeUnavailableRetryAfter = time.Second
)

// alwaysStoredHeaders are the response headers every replay needs.
var alwaysStoredHeaders = []string{"Content-Type", "Location", "Retry-After"}

// config holds the options of a Middleware.
type config struct {
	lease                time.Duration
	retention            time.Duration
	store5xx             bool
	maxBody              int64
	jsonTokens           int // JSONTokenLimit(maxBody), set by New
	logger               *slog.Logger
	inProgressRetryAfter time.Duration
	storedHeaders        []string // canonical names
	methods              map[string]bool
	principal            PrincipalFunc
	anonymous            bool // WithAnonymous
	principalSecret      bool // the deprecated WithPrincipalSecret was given
	key                  keySource
	answers              Answers
	replayMismatch       bool
	storeTimeout         time.Duration
	waitOriginal         time.Duration   // WithWaitForOriginal (waitoriginal.go)
	tel                  serverTelemetry // WithTracerProvider, WithMeterProvider (telemetry.go)
	downstreamSecret     []byte          // WithDownstreamSecret (downstream.go)
	downstreamSet        bool
}

func defaultConfig() config {
	return config{
		lease:                DefaultLease,
		retention:            DefaultRetention,
		maxBody:              DefaultMaxBody,
		logger:               slog.New(slog.DiscardHandler),
		inProgressRetryAfter: DefaultInProgressRetryAfter,
		storedHeaders:        canonicalHeaderNames(alwaysStoredHeaders),
		methods:              map[string]bool{http.MethodPost: true, http.MethodPatch: true},
		key:                  keySource{header: KeyHeader, parseHeader: ParseKey, required: true},
		answers:              ProblemAnswers{},
		storeTimeout:         DefaultStoreTimeout,
	}
}

// Option configures a Middleware.
type Option func(*config)

// WithLease sets how long a reservation is held before a retry with the
// same key may take it over (default 30 s). It should outlast the slowest
// handler, and must last MinLease of the store timeout (3 × it), or New
// refuses it. A non-positive d is ignored.
func WithLease(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.lease = d
		}
	}
}

// WithStoreTimeout bounds each store operation (default 3 s): a Reserve
// that has not answered by then is answered 503 /store-unavailable with
// Retry-After, and a Complete or Release gives up, leaving the key to its
// lease. Under Once a stalled call is a *StoreTimeoutError. A
// non-positive d is ignored.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.storeTimeout = d
		}
	}
}

// WithRetention sets how long a completed key is replayed (default 24 h).
// A non-positive d is ignored.
func WithRetention(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.retention = d
		}
	}
}

// WithStore5xx makes a 5xx answer or a panic final: it is stored and
// replayed (Stripe v1 style). By default the key is released so a retry
// runs the handler again. A 503 is never stored: it says the request was
// not taken on. Nor is its key freed while the client waits: it stays
// reserved until its lease ends (see the package doc, http.TimeoutHandler).
func WithStore5xx(store bool) Option {
	return func(c *config) { c.store5xx = store }
}

// WithMaxBody sets the largest request body the layer reads (default
// 1 MiB); a larger one is answered 413 /body-too-large and nothing is
// stored. It also sets how many values a JSON body may hold
// (JSONTokenLimit: one per 32 bytes of n, never fewer than
// MaxJSONTokens). A non-positive n is ignored.
func WithMaxBody(n int64) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBody = n
		}
	}
}

// WithLogger sets where the layer logs. Nil, the default, is silent.
// Keys are logged as a short hash (KeyHash), bodies never.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			l = slog.New(slog.DiscardHandler)
		}
		c.logger = l
	}
}

// WithInProgressRetryAfter sets the Retry-After of a 409 /in-progress
// answer (default 1 s). A non-positive d is ignored.
func WithInProgressRetryAfter(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.inProgressRetryAfter = d
		}
	}
}

// WithStoredHeaders names response headers kept for replays in addition
// to Content-Type, Location and Retry-After. Headers not named are sent
// on the first answer only, so a Set-Cookie or a per-request id is never
// handed to a retry.
func WithStoredHeaders(names ...string) Option {
	return func(c *config) {
		c.storedHeaders = canonicalHeaderNames(append(alwaysStoredHeaders[:len(alwaysStoredHeaders):len(alwaysStoredHeaders)], names...))
	}
}

// WithMethods sets which methods are guarded (default POST and PATCH).
// Requests with any other method pass straight to the handler: GET, PUT
// and DELETE are idempotent by definition.
func WithMethods(methods ...string) Option {
	return func(c *config) {
		c.methods = make(map[string]bool, len(methods))
		for _, m := range methods {
			c.methods[m] = true
		}
	}
}

// WithAnswers sets how protocol answers (400, 409, 422, 503) are written
// and how a replay is marked; the default is ProblemAnswers.
func WithAnswers(a Answers) Option {
	return func(c *config) {
		if a != nil {
			c.answers = a
		}
	}
}

// WithReplayOnMismatch answers a completed key sent with another payload
// with the stored response instead of 422 /key-reused, for APIs whose
// contract is the first request's result for the key alone.
func WithReplayOnMismatch() Option {
	return func(c *config) { c.replayMismatch = true }
}

// canonicalHeaderNames returns names in canonical form, without
// duplicates or empty names.
func canonicalHeaderNames(names []string) []string {
	out := make([]string, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		n = http.CanonicalHeaderKey(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}
