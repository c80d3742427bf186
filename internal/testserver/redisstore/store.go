package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server/redisstore"
)

// Store is a testserver.Store in Redis: server/redisstore's idempotency
// records, and the payments API's hashes beside them under the same
// prefix, each effect committed with its key in one script (CommitEffect).
// It is safe for concurrent use.
type Store struct {
	*redisstore.Store
	client  redis.UniversalClient
	keys    keys
	effects effects
}

var _ testserver.Store = (*Store)(nil)

// The options of server/redisstore, which Open takes.
type Option = redisstore.Option

// Defaults of server/redisstore.
const (
	DefaultPrefix           = redisstore.DefaultPrefix
	DefaultReservationGrace = redisstore.DefaultReservationGrace
)

var (
	WithPrefix           = redisstore.WithPrefix
	WithLogger           = redisstore.WithLogger
	WithReservationGrace = redisstore.WithReservationGrace
	WithAllowVolatile    = redisstore.WithAllowVolatile
	ErrUnsafeServer      = redisstore.ErrUnsafeServer
)

// Open opens server/redisstore on url, in any of the forms it reads (one
// server, or a Redis Cluster).
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	records, err := redisstore.Open(ctx, url, opts...)
	if err != nil {
		return nil, err
	}
	return wrap(records), nil
}

// New opens server/redisstore on a go-redis client of the caller's, as
// redisstore.New does; Close leaves the client open.
func New(ctx context.Context, client redis.UniversalClient, opts ...Option) (*Store, error) {
	records, err := redisstore.New(ctx, client, opts...)
	if err != nil {
		return nil, err
	}
	return wrap(records), nil
}

func wrap(records *redisstore.Store) *Store {
	return &Store{Store: records, client: records.Client(), keys: keys{records: records}, effects: newEffects()}
}
