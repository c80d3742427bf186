package redisstore

import (
	"context"
	"testing"

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
