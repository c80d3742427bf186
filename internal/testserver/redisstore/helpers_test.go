package redisstore

import (
	"context"
	"net/url"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// newPrefix returns a key prefix of the test's own, whose keys are
// deleted when the test ends.
func newPrefix(tb testing.TB, rawURL string) string {
	tb.Helper()
	return testenv.RedisPrefix(tb, rawURL, "idemtest:")
}

// openStore opens a store under prefix, closed when the test ends. The
// test Redis persists nothing, so the store is opened with the override.
func openStore(tb testing.TB, rawURL, prefix string, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(context.Background(), rawURL, append([]Option{WithPrefix(prefix), WithAllowVolatile()}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// rawClient talks to the test server directly, to look at or break keys.
func rawClient(t *testing.T, rawURL string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(rawURL)
	require.NoError(t, err)
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// urlVia returns rawURL with its address replaced by addr.
func urlVia(t *testing.T, rawURL, addr string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	u.Host = addr
	return u.String()
}

// targetOf returns the host:port url points at.
func targetOf(t *testing.T, rawURL string) string {
	t.Helper()
	opts, err := redis.ParseURL(rawURL)
	require.NoError(t, err)
	return opts.Addr
}
