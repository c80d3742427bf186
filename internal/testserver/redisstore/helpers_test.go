package redisstore

import (
	"context"
	"crypto/rand"
	"net/url"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// newPrefix returns a key prefix no other test uses and deletes every key
// under it when the test ends, so tests running in parallel (and other
// packages' tests on the same server) never see each other's keys.
func newPrefix(tb testing.TB, rawURL string) string {
	tb.Helper()
	prefix := "idemtest:" + rand.Text() + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			tb.Errorf("clean up %s: %v", prefix, err)
			return
		}
		client := redis.NewClient(opts)
		defer client.Close()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("clean up %s: %v", prefix, err)
		}
	})
	return prefix
}

// openStore opens a store under prefix, closed when the test ends.
func openStore(tb testing.TB, rawURL, prefix string, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(context.Background(), rawURL, append([]Option{WithPrefix(prefix)}, opts...)...)
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
