package redisstore

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

// A bearer token is stored only as its keyed hash: no key name or value
// under the store's prefix holds it, and the anonymous caller and a token
// called "anonymous" are two principals.
func TestBearerTokenIsNeverStored(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	prefix := newPrefix(t, url)
	const token = "tok_never_stored_9c1e"
	storetest.PayAsEachPrincipal(t, openStore(t, url, prefix), token)

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
