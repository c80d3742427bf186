package idem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/hashicorp/go-cleanhttp"

	"github.com/idemkit/idem/keystore"
)

// Client sends intents: it owns a keystore, an HTTP connection pool and a
// retry policy. It is safe for concurrent use. Build it with New and
// release it with Close.
type Client struct {
	cfg    config
	store  keystore.Store
	log    *slog.Logger
	sender *http.Client // the shared pool, shielded from CloseIdleConnections, with intentRedirects

	locks keyLocks
	// local holds the secrets of intents (headers, and query parameters
	// kept out of their stored URLs, see WithSecretQueryParams) and which
	// of them were never executed.
	local localState
	// principalMemo is the default principal of the last credentials
	// Begin named (principalmemo.go).
	principalMemo principalMemoSlot
	// urlMemo is the last URL Begin stored (urlmemo.go).
	urlMemo urlMemoSlot
	closed  atomic.Bool
	tel     *telemetry // nil without WithTracerProvider or WithMeterProvider

	// updateFn and storeSettledFn are c.update and c.storeSettled, made
	// once: a method value handed to write is otherwise allocated on
	// every write.
	updateFn, storeSettledFn func(context.Context, *keystore.Record) error

	// purger runs the scheduled purges (purgeschedule.go); nil without.
	purger *purger
}

// New builds a Client. Without options it keeps intents in memory; pass
// WithStore(keystore.OpenBolt(...)) for intents that survive a restart.
//
// Ownership: the Client closes the store it was given when it is closed,
// also when New fails because of another option.
func New(opts ...Option) (*Client, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&cfg); err != nil {
			if cfg.store != nil {
				_ = cfg.store.Close()
			}
			return nil, err
		}
	}
	if cfg.store == nil {
		cfg.store = keystore.NewMemory()
	}
	for _, name := range cfg.dialect.SecretHeaders {
		// The dialect's credentials are secret whatever order the
		// options came in (WithDialect, WithSecretHeaders).
		cfg.secretHeaders[http.CanonicalHeaderKey(name)] = true
	}
	if err := cfg.keystorePrincipalKey(); err != nil {
		_ = cfg.store.Close()
		return nil, err
	}
	if !cfg.retentionSet && cfg.dialect.Retention > 0 {
		cfg.retention = cfg.dialect.Retention
	}
	if cfg.httpClient == nil {
		cfg.httpClient = cleanhttp.DefaultPooledClient()
		cfg.httpClient.Timeout = DefaultAttemptTimeout
		cfg.ownHTTPClient = true
	}
	log := cfg.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sender := shieldedClient(cfg.httpClient)
	sender.CheckRedirect = intentRedirects(cfg.secretHeaders, cfg.secretParams, sender.CheckRedirect)
	c := &Client{
		cfg:    cfg,
		store:  cfg.store,
		log:    log,
		sender: sender,
		tel:    newTelemetry(&cfg),
	}
	c.updateFn, c.storeSettledFn = c.update, c.storeSettled
	c.startPurging()
	if _, ok := cfg.store.(keystore.NameScanner); !ok {
		// Begin then sees an earlier build's unscoped name only: a name
		// begun under other credentials looks new.
		log.Warn("idem: the keystore cannot find a name under other principals (keystore.NameScanner); Begin cannot tell refreshed credentials from another account: set WithPrincipal, or forward NameScanner from a wrapping store",
			"keystore", fmt.Sprintf("%T", cfg.store))
	}
	return c, nil
}

// Close stops the scheduled purge (WithPurgeEvery), then closes the
// keystore and, when the Client built its own HTTP client, its idle
// connections. Calls in flight may fail with ErrClosed or
// the store's error; later calls fail with ErrClosed. Close is idempotent.
func (c *Client) Close() error {
	if c == nil || c.store == nil {
		return nil // a Client New did not build holds nothing
	}
	if c.closed.Swap(true) {
		return nil
	}
	if c.cfg.ownHTTPClient {
		c.cfg.httpClient.CloseIdleConnections()
	}
	c.stopPurging()
	c.releaseUnsentClaims()
	c.principalMemo.forget()
	c.tel.close()
	if err := c.store.Close(); err != nil {
		return fmt.Errorf("idem: closing keystore: %w", err)
	}
	return nil
}

// releaseUnsentClaims gives up the claims Begin took on intents this
// Client never sent, so a producer that begins intents for a fleet of
// workers to send hands them over when it closes rather than when their
// leases run out. Bounded by the write grace; a claim not released runs
// out.
func (c *Client) releaseUnsentClaims() {
	claimer, ok := c.store.(keystore.Claimer)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.writeGrace)
	defer cancel()
	for _, key := range c.local.unsentKeys() {
		if err := claimer.Unclaim(ctx, key, c.cfg.claims.owner); err != nil {
			c.log.WarnContext(ctx, "idem: releasing a claim at close failed; it runs out with its lease", "key", keyHash(key), "err", err)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// checkOpen refuses a Client that New did not build (a zero value, a nil
// pointer) or that was closed.
func (c *Client) checkOpen() error {
	if c == nil || c.store == nil {
		return ErrClientNotOpen
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// debugEnabled reports whether debug records are kept, so that calls can
// skip building attributes (and hashing keys) for a silent logger.
func (c *Client) debugEnabled(ctx context.Context) bool {
	return c.log.Enabled(ctx, slog.LevelDebug)
}

// keyHash is what logs and error messages show instead of a raw key.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}

// NewKeyV4 returns a random (version 4) UUID from crypto/rand. It is the
// default key generator. The random bytes are read from crypto/rand 64
// keys at a time and handed out once each, then cleared.
func NewKeyV4() (string, error) {
	var u [16]byte
	if err := keyRandom.read(u[:]); err != nil {
		return "", fmt.Errorf("idem: generating key: %w", err)
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:]), nil
}

// keyRandom is the buffer of random bytes NewKeyV4 draws from.
var keyRandom randomBuffer

// randomBuffer hands out bytes read from crypto/rand in blocks: one read
// serves 64 keys, and a key's bytes are cleared once handed out, so none
// is ever given twice.
type randomBuffer struct {
	mu   sync.Mutex
	buf  [64 * 16]byte
	left int // unread bytes, at the end of buf
}

// read fills p (at most len(buf) bytes) with bytes no one was given.
func (r *randomBuffer) read(p []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left < len(p) {
		if _, err := rand.Read(r.buf[:]); err != nil {
			return err
		}
		r.left = len(r.buf)
	}
	from := len(r.buf) - r.left
	copy(p, r.buf[from:from+len(p)])
	clear(r.buf[from : from+len(p)])
	r.left -= len(p)
	return nil
}

// NewKeyV7 returns a time-ordered (version 7) UUID whose low bits come
// from crypto/rand; use it with WithKeyGenerator when keys should sort by
// creation time.
func NewKeyV7() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("idem: generating key: %w", err)
	}
	return u.String(), nil
}

// keyLocks serialises Do calls on one key within this process, so
// concurrent calls send once: the waiter sees what the first stored.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*keyLock
	// spare is a lock no key holds, kept for the next key: one call after
	// another would otherwise allocate a lock and its channel each.
	spare *keyLock
}

type keyLock struct {
	ch   chan struct{} // holds one token while the key is locked
	refs int
}

// lock waits for the key's lock or ctx; the caller releases it with
// unlock(key, kl).
func (l *keyLocks) lock(ctx context.Context, key string) (*keyLock, error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = make(map[string]*keyLock)
	}
	kl := l.locks[key]
	if kl == nil {
		kl = l.spare
		l.spare = nil
		if kl == nil {
			kl = &keyLock{ch: make(chan struct{}, 1)}
		}
		l.locks[key] = kl
	}
	kl.refs++
	l.mu.Unlock()

	select {
	case kl.ch <- struct{}{}:
		return kl, nil
	case <-ctx.Done():
		l.release(key, kl)
		return nil, ctx.Err()
	}
}

// unlock releases the lock that lock returned for key.
func (l *keyLocks) unlock(key string, kl *keyLock) {
	<-kl.ch
	l.release(key, kl)
}

// release drops one reference to kl, and kl itself with the last.
func (l *keyLocks) release(key string, kl *keyLock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kl.refs--
	if kl.refs == 0 {
		// No one holds or waits for kl: its channel is empty.
		delete(l.locks, key)
		if l.spare == nil {
			l.spare = kl
		}
	}
}

// Keystore returns the store the Client keeps its intents in, for
// packages built on the client that keep records of their own beside the
// intents, in the same file or database (package saga keeps its runs
// there through keystore.RunKeeper). Write intents only through the
// Client: a record changed behind its back is still checked and judged,
// but the Client's in-process state no longer matches it. The Client
// owns the store; do not close it.
func (c *Client) Keystore() keystore.Store {
	if c == nil {
		return nil
	}
	return c.store
}
