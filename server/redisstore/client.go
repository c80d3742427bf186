package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrInvalidURL means Open could not read its URL. The error names what
// is wrong; see Open for the forms it reads.
var ErrInvalidURL = errors.New("redisstore: invalid Redis URL")

// ErrContextTimeoutDisabled means New was given a go-redis client whose
// options leave ContextTimeoutEnabled false: such a client ignores the
// deadline of the context it is given, so the layer's store timeout
// (server.WithStoreTimeout) could not bound a call, and a stalled Redis
// would hold requests for the client's own ReadTimeout or longer. Set
// ContextTimeoutEnabled: true in the client's options.
var ErrContextTimeoutDisabled = errors.New("redisstore: the Redis client ignores context deadlines; " +
	"set ContextTimeoutEnabled: true in its options so the store timeout bounds every call")

// clientFromURL builds the go-redis client rawURL names, its options set
// as the store needs them (see tuneTimeouts). A redis:// or rediss:// URL
// with one or more addr= query parameters is a Redis Cluster
// (redis.ParseClusterURL); any other is one server (redis.ParseURL), which
// Open switches to a cluster client if that server says it is a cluster
// node.
func clientFromURL(rawURL string) (redis.UniversalClient, error) {
	if isClusterURL(rawURL) {
		opts, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
		}
		opts.ContextTimeoutEnabled = true
		// A script is sent once: one whose reply was lost may have run.
		// MOVED and ASK are still followed (MaxRedirects): such a reply
		// means the script did not run.
		opts.MaxRetries = -1
		return redis.NewClusterClient(opts), nil
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	return redis.NewClient(opts), nil
}

// isClusterURL says whether rawURL is go-redis's cluster form: redis://
// or rediss:// with addr= query parameters naming further nodes.
func isClusterURL(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return (scheme == "redis" || scheme == "rediss") && u.Query().Has("addr")
}

// clusterClientFromURL builds a cluster client for a one-address URL
// whose server turned out to be a cluster node. Redis Cluster has only
// database 0, so a URL naming another is refused.
func clusterClientFromURL(rawURL string) (redis.UniversalClient, error) {
	single, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	if single.DB != 0 {
		return nil, fmt.Errorf("%w: the server is a Redis Cluster node, which has only database 0, but the URL names database %d",
			ErrInvalidURL, single.DB)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	u.Path = "" // the database, 0, which the cluster form does not take
	q := u.Query()
	q.Del("db")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseClusterURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, err)
	}
	opts.ContextTimeoutEnabled = true
	opts.MaxRetries = -1
	return redis.NewClusterClient(opts), nil
}

// isClusterNode says whether the server c talks to runs in cluster mode.
func isClusterNode(ctx context.Context, c *redis.Client) (bool, error) {
	info, err := c.Info(ctx, "cluster").Result()
	if err != nil {
		return false, err
	}
	return strings.Contains(info, "cluster_enabled:1"), nil
}

// checkClient refuses a client that would ignore the deadline of the
// contexts it is given. A client of another type than go-redis's own
// cannot be inspected and is taken as it is.
func checkClient(c redis.UniversalClient) error {
	var enabled bool
	switch c := c.(type) {
	case nil:
		return errors.New("redisstore: New needs a Redis client, got nil")
	case *redis.Client:
		enabled = c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		enabled = c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		enabled = c.Options().ContextTimeoutEnabled
	default:
		return nil
	}
	if !enabled {
		return ErrContextTimeoutDisabled
	}
	return nil
}

// describe names the servers of c for messages, without passwords.
func describe(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "the Redis Cluster at " + strings.Join(c.Options().Addrs, ",")
	case *redis.Ring:
		return "the Redis ring"
	}
	return "Redis"
}
