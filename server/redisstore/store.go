package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/server"
)

// Store is a server.Store in Redis. It is safe for concurrent use, and
// any number of Stores (in one process or many) may share one Redis
// database and prefix.
type Store struct {
	client     redis.UniversalClient
	ownsClient bool
	keys       keys
	scripts    scripts
	graceMS    string // the reservation grace in ms, as the script takes it
	logger     *slog.Logger
	// sweepCursor is the key group the next Sweep starts at.
	sweepCursor atomic.Uint32
}

var _ server.Store = (*Store)(nil)

// Open connects to the Redis named by url and checks that it answers. It
// reads go-redis's URL forms:
//
//   - redis://[user:password@]host:port[/db][?option=value…] (rediss://
//     for TLS, unix:///path for a socket): one server, as redis.ParseURL
//     reads it; if that server is a Redis Cluster node, the store uses
//     the whole cluster through it;
//   - redis://[user:password@]host:p1?addr=host:p2&addr=host:p3: a Redis
//     Cluster given by several of its nodes, as redis.ParseClusterURL
//     reads it.
//
// Options such as read_timeout=2s or pool_size=20 go in the query, as
// go-redis documents. For a Sentinel-managed Redis or a client of your
// own, build it with go-redis and use New.
//
// Open fails, rather than returning a store that fails later, when the
// server cannot be reached, with ErrInvalidURL when url cannot be read,
// and with ErrUnsafeServer when the configuration (CONFIG GET) of the
// server, or of any cluster master, says it persists nothing or may evict
// records, unless WithAllowVolatile is given.
//
// Every call honours its context's deadline (the layer's
// server.WithStoreTimeout), and a script is never sent twice: one whose
// reply was lost may have run, and only the caller's retry under the same
// idempotency key resolves that safely.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	client, err := clientFromURL(url)
	if err != nil {
		return nil, err
	}
	if single, ok := client.(*redis.Client); ok {
		client, err = clusterIfNode(ctx, single, url)
		if err != nil {
			return nil, err
		}
	}
	s, err := newStore(ctx, client, cfg)
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	s.ownsClient = true
	return s, nil
}

// clusterIfNode returns single, or, when its server is a Redis Cluster
// node, a cluster client for url in its place (single is then closed).
func clusterIfNode(ctx context.Context, single *redis.Client, url string) (redis.UniversalClient, error) {
	node, err := isClusterNode(ctx, single)
	if redis.HasErrorPrefix(err, "SELECT is not allowed in cluster mode") {
		node, err = true, nil // a cluster node, and the URL names a database: refused below
	}
	if err != nil || !node {
		// A server that cannot say (unreachable, or INFO disabled) is
		// taken as one server: newStore's ping reports one unreachable.
		return single, nil
	}
	_ = single.Close()
	return clusterClientFromURL(url)
}

// New returns a store on client, a go-redis client of the caller's: a
// *redis.Client, a *redis.ClusterClient (Redis Cluster), a failover
// client (Sentinel), or any redis.UniversalClient. It checks the server
// as Open does — on a cluster, every master — and refuses, with
// ErrContextTimeoutDisabled, a go-redis client whose options leave
// ContextTimeoutEnabled false, since it would ignore the store timeout.
// Scripts are sent once whatever the client's MaxRetries. Close does not
// close client: the caller owns it.
func New(ctx context.Context, client redis.UniversalClient, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	if err := checkClient(client); err != nil {
		return nil, err
	}
	return newStore(ctx, client, cfg)
}

// newStore pings client, checks the servers' configuration and returns
// the store on it.
func newStore(ctx context.Context, client redis.UniversalClient, cfg config) (*Store, error) {
	if err := client.Ping(ctx).Err(); err != nil {
		return nil, fmt.Errorf("redisstore: connect to %s: %w", describe(client), err)
	}
	if err := checkServers(ctx, client, cfg.allowVolatile, cfg.logger); err != nil {
		return nil, err
	}
	return &Store{
		client:  client,
		keys:    newKeys(cfg.prefix),
		scripts: newScripts(),
		graceMS: strconv.FormatInt(cfg.grace.Milliseconds(), 10),
		logger:  cfg.logger,
	}, nil
}

// Close closes the connection pool of a store from Open; a store from New
// leaves its client to the caller.
func (s *Store) Close() error {
	if !s.ownsClient {
		return nil
	}
	return s.client.Close()
}

// Reserve implements server.Store.
func (s *Store) Reserve(ctx context.Context, scope server.Scope, key, fingerprint string, lease time.Duration) (*server.Reservation, *server.Record, error) {
	if key == "" || fingerprint == "" {
		return nil, nil, errors.New("redisstore: reserve needs a key and a fingerprint")
	}
	if lease < time.Millisecond {
		return nil, nil, fmt.Errorf("redisstore: lease must be at least 1ms, got %v", lease)
	}
	token := rand.Text()
	reply, err := s.scripts.reserve.run(ctx, s.client, s.keys.recordKeys(scope, key),
		token, lease.Milliseconds(), fingerprint, s.graceMS,
	).Result()
	if err != nil {
		return nil, nil, fmt.Errorf("redisstore: reserve: %w", err)
	}
	var rec *server.Record
	switch reply := reply.(type) {
	case int64:
		if s.logger.Enabled(ctx, slog.LevelDebug) { // the key's hash is an HMAC: only for a reader
			s.logger.Debug("redisstore: key reserved", "key_hash", server.KeyHash(key))
		}
		return &server.Reservation{Scope: scope, Key: key, Fingerprint: fingerprint, Token: token}, nil, nil
	case string:
		rec, err = parseStringRecord(scope, key, reply)
	case []any:
		rec, err = parseHashRecord(scope, key, reply)
	default:
		err = fmt.Errorf("unexpected reply %v", reply)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("redisstore: reserve: %w", err)
	}
	return nil, rec, nil
}

// Complete implements server.Store.
func (s *Store) Complete(ctx context.Context, c server.Completion) error {
	args, err := completionArgs(c)
	if err != nil {
		return fmt.Errorf("redisstore: complete: %w", err)
	}
	r := c.Reservation
	owned, err := s.scripts.complete.run(ctx, s.client, s.keys.recordKeys(r.Scope, r.Key), args...).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: complete: %w", err)
	}
	if owned == 0 {
		s.logger.Info("redisstore: stale owner fenced on complete", "key_hash", server.KeyHash(r.Key))
		return fmt.Errorf("redisstore: complete: %w", server.ErrFenced)
	}
	return nil
}

// Release implements server.Store.
func (s *Store) Release(ctx context.Context, r server.Reservation) error {
	owned, err := s.scripts.release.run(ctx, s.client, s.keys.recordKeys(r.Scope, r.Key), r.Token).Int64()
	if err != nil {
		return fmt.Errorf("redisstore: release: %w", err)
	}
	if owned == 0 {
		s.logger.Info("redisstore: stale owner fenced on release", "key_hash", server.KeyHash(r.Key))
		return fmt.Errorf("redisstore: release: %w", server.ErrFenced)
	}
	return nil
}

// Sweep implements server.Store, working through the expiry index of one
// key group (KeyGroups) after another. Redis itself drops a completed record
// when its retention ends and a reservation when its lease plus the grace
// has passed (the key's expiry, PXAT), so the memory comes back without Sweep; what
// Sweep does is work through the expiry index, removing up to limit
// entries that are due and deleting any such record Redis has not dropped
// yet. It returns how many due records left the store, counting those
// Redis dropped first. Run it periodically, as with any store, or the
// index keeps an entry per key ever reserved.
func (s *Store) Sweep(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("redisstore: sweep limit must be positive, got %d", limit)
	}
	return s.sweepGroups(ctx, limit)
}

// completionArgs returns the script arguments of c: its token, the
// encoded response (encodeResponse) and the retention in milliseconds.
func completionArgs(c server.Completion) ([]any, error) {
	// Expiries are Unix milliseconds in Redis.
	if err := server.ValidateCompletion(c, time.Millisecond); err != nil {
		return nil, err
	}
	return []any{c.Reservation.Token, encodeResponse(c.Response), c.Retention.Milliseconds()}, nil
}
