package redisstore

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
)

// A bearer token is stored only as its keyed hash: no key name or value
// under the store's prefix holds it, and the anonymous caller and a token
// called "anonymous" are two principals.
func TestBearerTokenIsNeverStored(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	prefix := newPrefix(t, url)
	srv, err := testserver.New(testserver.WithStore(openStore(t, url, prefix)),
		testserver.WithPrincipalKey([]byte("redisstore test principal key")))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); _ = srv.Close() })
	const token = "tok_never_stored_9c1e"
	for _, auth := range []string{"Bearer " + token, "", "Bearer anonymous"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/v1/payments",
			strings.NewReader(`{"amount":1,"currency":"EUR"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(testserver.KeyHeader, "k-principal")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Empty(t, resp.Header.Get(testserver.ReplayedHeader), "%q is a principal of its own", auth)
	}

	c := rawClient(t, url)
	ctx := t.Context()
	var dump strings.Builder
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		dump.WriteString(key + " ")
		switch c.Type(ctx, key).Val() {
		case "hash":
			for f, v := range c.HGetAll(ctx, key).Val() {
				dump.WriteString(f + "=" + v + " ")
			}
		case "zset":
			dump.WriteString(strings.Join(c.ZRange(ctx, key, 0, -1).Val(), " "))
		case "string":
			dump.WriteString(c.Get(ctx, key).Val())
		}
	}
	require.NoError(t, iter.Err())
	assert.Contains(t, dump.String(), "bearer:", "the principal is stored as its hash")
	assert.NotContains(t, dump.String(), token)
}
