package idem

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/keystore"
)

// Defaults of a Client built by New without options.
const (
	// DefaultMaxAttempts is the number of attempts one Do call makes.
	DefaultMaxAttempts = 5
	// DefaultRetention matches the reference server's key retention: an
	// intent older than this is never resent.
	DefaultRetention = 24 * time.Hour
	// DefaultPollInterval is the wait between polls of a 202 operation
	// when the server gives no Retry-After.
	DefaultPollInterval = time.Second
	// DefaultPollMax bounds how long one Do call polls a 202 operation
	// before handing back "accepted".
	DefaultPollMax = 30 * time.Second
	// DefaultOperationGrace is how long after a 202 a 404 or 410 from its
	// operation is taken for a server that has not caught up yet.
	DefaultOperationGrace = time.Minute
	// DefaultAttemptTimeout bounds one attempt of the default HTTP client.
	DefaultAttemptTimeout = 30 * time.Second
)

// Option configures a Client. Options are applied in order by New; an
// invalid value makes New fail with a clear error.
type Option func(*config) error

// RequestEditor changes a request before every attempt, typically to set
// credentials that a keystore never holds (after a restart, for example).
type RequestEditor func(ctx context.Context, req *http.Request) error

// config is everything New can be told. Zero values are never read: New
// fills every field with its default before applying options.
type config struct {
	store         keystore.Store
	httpClient    *http.Client
	ownHTTPClient bool
	maxAttempts   int
	backoff       Backoff
	raCeiling     time.Duration
	budget        RetryBudget
	retention     time.Duration
	logger        *slog.Logger
	editor        RequestEditor
	secretHeaders map[string]bool
	quotedKeys    bool
	keyGen        func() (string, error)
	pollInterval  time.Duration
	pollMax       time.Duration
	opGrace       time.Duration
	now           func() time.Time
	claims        claimConfig
	dialect       dialect.Dialect
	retentionSet  bool
	reconciler    Reconciler
	writeGrace    time.Duration
	storeTimeout  time.Duration
	principal     Principal
	principalKey  []byte
	// principalKeyGiven: WithPrincipalKey set principalKey; otherwise a
	// keystore that keeps one gives it (keystorePrincipalKey).
	principalKeyGiven bool
	secretParams      map[string]bool
	// tracerProvider and meterProvider: telemetry.go.
	tracerProvider trace.TracerProvider
	meterProvider  metric.MeterProvider
	// purgeEvery: WithPurgeEvery (purgeschedule.go); purgeEverySet says
	// it was given, 0 included.
	purgeEvery    time.Duration
	purgeEverySet bool
}

func defaultConfig() config {
	return config{
		maxAttempts: DefaultMaxAttempts,
		backoff:     FullJitter(DefaultBackoffBase, DefaultBackoffCap, rand.Float64),
		raCeiling:   DefaultRetryAfterCeiling,
		budget:      NewAdaptiveBudget(AdaptiveBudgetConfig{}),
		retention:   DefaultRetention,
		secretHeaders: map[string]bool{
			"Authorization":       true,
			"Proxy-Authorization": true,
			"Cookie":              true,
		},
		keyGen:       NewKeyV4,
		pollInterval: DefaultPollInterval,
		pollMax:      DefaultPollMax,
		opGrace:      DefaultOperationGrace,
		now:          time.Now,
		claims:       defaultClaimConfig(),
		dialect:      dialect.Draft(),
		writeGrace:   DefaultWriteGrace,
		storeTimeout: DefaultStoreTimeout,
		principalKey: defaultPrincipalKey,
		secretParams: setOf(defaultSecretParams),
	}
}

// setOf is names as a set.
func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// WithStore sets where intents live. The Client owns the store from then
// on: Close closes it. A store set by an earlier option is closed and
// replaced (so is this one, by a later option). Default:
// keystore.NewMemory(), which does not survive a restart.
//
// Of the three ways to give the client a keystore, use this one only for
// a store the program builds itself: a keystore of its own, NewMemory in
// tests, or keystore.OpenBolt when it needs the *keystore.Bolt. For a
// bbolt file prefer WithBoltStore; for a location read from
// configuration, WithKeystore.
func WithStore(s keystore.Store) Option {
	return func(c *config) error {
		if s == nil {
			return errors.New("idem: WithStore: nil store")
		}
		c.setStore(s)
		return nil
	}
}

// WithBoltStore opens (or creates) the bbolt keystore at path and uses it,
// as WithStore(keystore.OpenBolt(path, opts)) would; opts may be nil. New
// fails with an error matching ErrLocked when another process holds the
// file past opts.Timeout. The Client owns the store and Close closes it; a
// store set by an earlier option is closed and replaced.
//
// This is the way to prefer for a program on one host: the file is
// opened by New, so a locked or damaged file is New's error, and its
// options are typed. WithKeystore opens the same file from a location
// string (when configuration may name Postgres instead); WithStore takes
// a store the program opened itself.
func WithBoltStore(path string, opts *keystore.BoltOptions) Option {
	return func(c *config) error {
		if c.store != nil {
			// Release the earlier store first: it may be this very file.
			_ = c.store.Close()
			c.store = nil
		}
		st, err := keystore.OpenBolt(path, opts)
		if err != nil {
			return fmt.Errorf("idem: opening keystore: %w", err)
		}
		c.store = st
		return nil
	}
}

// WithHTTPClient sets the HTTP client whose connection pool every attempt
// uses. The Client never closes its idle connections; the caller owns it.
// Default: a pooled client with dial, TLS and per-attempt timeouts.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return errors.New("idem: WithHTTPClient: nil client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithBaseTransport sends every attempt through rt, an existing
// RoundTripper (an OAuth2 or signing transport, an instrumented one), with
// the default per-attempt timeout: Transport then wraps rt, adding keys
// and retries on top of it. It is WithHTTPClient(&http.Client{Transport:
// rt, Timeout: DefaultAttemptTimeout}); the caller owns rt.
func WithBaseTransport(rt http.RoundTripper) Option {
	return func(c *config) error {
		if rt == nil {
			return errors.New("idem: WithBaseTransport: nil RoundTripper")
		}
		c.httpClient = &http.Client{Transport: rt, Timeout: DefaultAttemptTimeout}
		return nil
	}
}

// WithMaxAttempts sets how many attempts one Do call (or one request
// through Transport) makes, counting the first. Default 5.
func WithMaxAttempts(n int) Option {
	return func(c *config) error {
		if n < 1 {
			return fmt.Errorf("idem: WithMaxAttempts(%d): need at least 1", n)
		}
		c.maxAttempts = n
		return nil
	}
}

// WithBackoff sets full-jitter exponential backoff: the n-th retry waits
// a random time in [0, min(cap, base·2ⁿ)). Defaults DefaultBackoffBase and
// DefaultBackoffCap.
func WithBackoff(base, cap time.Duration) Option {
	return func(c *config) error {
		if base <= 0 || cap < base {
			return fmt.Errorf("idem: WithBackoff(%s, %s): need 0 < base <= cap", base, cap)
		}
		c.backoff = FullJitter(base, cap, rand.Float64)
		return nil
	}
}

// WithBackoffPolicy sets any Backoff, for example a constant one in tests.
func WithBackoffPolicy(b Backoff) Option {
	return func(c *config) error {
		if b == nil {
			return errors.New("idem: WithBackoffPolicy: nil backoff")
		}
		c.backoff = b
		return nil
	}
}

// WithRetryAfterCeiling caps the Retry-After hints the client honours.
// Default DefaultRetryAfterCeiling.
func WithRetryAfterCeiling(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("idem: WithRetryAfterCeiling(%s): need a positive duration", d)
		}
		c.raCeiling = d
		return nil
	}
}

// WithBudget sets the retry budget shared by every call of the client.
// WithBudget(nil) means unlimited retries (bounded only by attempts); a
// fixed token bucket is WithBudget(NewBudget(DefaultBudgetCapacity,
// DefaultBudgetRetryCost, DefaultBudgetSuccessRefill)). Default:
// NewAdaptiveBudget(AdaptiveBudgetConfig{}).
func WithBudget(b RetryBudget) Option {
	return func(c *config) error {
		c.budget = b
		return nil
	}
}

// WithRetention sets the server's key retention. A pending intent older
// than this is marked Expired and never resent; so is an accepted one
// whose 202 is older than this when its operation gives no answer or is
// gone (see Client.Do). Default 24 h.
func WithRetention(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("idem: WithRetention(%s): need a positive duration", d)
		}
		c.retention = d
		c.retentionSet = true
		return nil
	}
}

// WithLogger sets the logger. Default: silent. Keys are logged only as a
// short hash and bodies never.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithRequestEditor sets a function applied to every attempt just before
// it is sent, after the stored headers and in-memory secrets, and to every
// poll of a 202's operation. It is how a process that resumes intents from
// Pending supplies credentials; an operation may live on another host, so
// an editor that adds credentials should check req.URL first. Polls need
// them too: an operation polled without them may answer 404, which after
// WithOperationGrace ends polling with ErrOperationGone. What it
// sets is never stored, and it cannot change the Idempotency-Key.
func WithRequestEditor(fn func(ctx context.Context, req *http.Request) error) Option {
	return func(c *config) error {
		c.editor = fn
		return nil
	}
}

// WithSecretHeaders marks more headers as secret, in addition to
// Authorization, Proxy-Authorization, Cookie and the credential headers
// of the client's dialect (dialect.Dialect.SecretHeaders: X-API-Key under
// dialect.Adyen). Secret headers are never written to the keystore; they
// are kept in memory for this process, sent only to the intent's own
// origin, and name the intent's principal.
func WithSecretHeaders(names ...string) Option {
	return func(c *config) error {
		for _, n := range names {
			if n == "" {
				return errors.New("idem: WithSecretHeaders: empty header name")
			}
			c.secretHeaders[http.CanonicalHeaderKey(n)] = true
		}
		return nil
	}
}

// WithQuotedKeys sends the key as a Structured Field String
// (Idempotency-Key: "…") instead of the bare form.
func WithQuotedKeys(quoted bool) Option {
	return func(c *config) error {
		c.quotedKeys = quoted
		return nil
	}
}

// WithKeyGenerator sets how keys are made. It must draw on a cryptographic
// random source and return 1–255 visible ASCII characters. Default
// NewKeyV4; NewKeyV7 gives time-ordered keys.
func WithKeyGenerator(gen func() (string, error)) Option {
	return func(c *config) error {
		if gen == nil {
			return errors.New("idem: WithKeyGenerator: nil generator")
		}
		c.keyGen = gen
		return nil
	}
}

// WithPolling bounds the polling of a 202 operation: interval is the wait
// between polls when the server gives no Retry-After, and the shortest
// wait when it gives a smaller one; max is the longest one Do call polls
// before returning the 202 with the intent Accepted.
// max == 0 disables polling. Defaults 1 s and 30 s.
func WithPolling(interval, max time.Duration) Option {
	return func(c *config) error {
		if interval <= 0 || max < 0 {
			return fmt.Errorf("idem: WithPolling(%s, %s): need interval > 0 and max >= 0", interval, max)
		}
		c.pollInterval = interval
		c.pollMax = max
		return nil
	}
}

// WithOperationGrace sets how long after a 202 a 404 or 410 from its
// operation (the 202's Location) is taken for a server that does not show
// the new operation yet (a replica behind, a cache) and polled again,
// rather than for an operation that is gone (ErrOperationGone). The
// grace runs from the 202's arrival. Default DefaultOperationGrace; 0
// believes the first 404 or 410.
func WithOperationGrace(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("idem: WithOperationGrace(%s): need a duration >= 0", d)
		}
		c.opGrace = d
		return nil
	}
}

// WithDialect sets how the client speaks idempotency to its server: the
// key's header (or body field) and form, how answers are judged, how long
// the provider keeps keys, and how operation documents are read. Default
// dialect.Draft(). Unless WithRetention is given too, the dialect's
// documented retention is the client's. The dialect's credential headers
// (SecretHeaders) are secret, as if given to WithSecretHeaders.
func WithDialect(d dialect.Dialect) Option {
	return func(c *config) error {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("idem: WithDialect: %w", err)
		}
		c.dialect = d
		return nil
	}
}

// WithWriteGrace bounds the keystore writes Do makes after its context has
// ended, one grace for all of them (see DefaultWriteGrace). Default
// DefaultWriteGrace.
func WithWriteGrace(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("idem: WithWriteGrace(%s): need a positive duration", d)
		}
		c.writeGrace = d
		return nil
	}
}

// withClock replaces the clock; tests use it to age intents.
func withClock(now func() time.Time) Option {
	return func(c *config) error {
		c.now = now
		return nil
	}
}

// setStore makes st the Client's store, closing the one an earlier option
// set, so no second store option leaks a file lock or a pool.
func (c *config) setStore(st keystore.Store) {
	if c.store != nil && c.store != st {
		_ = c.store.Close()
	}
	c.store = st
}
