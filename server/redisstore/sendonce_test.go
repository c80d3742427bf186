package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

// A completion whose reply is lost (Redis ran it, the connection died
// before the answer came back) is not sent again, though the caller's
// client retries commands (go-redis's default MaxRetries): the call
// reports the lost connection, an unknown outcome, instead of running the
// script a second time and reporting the key as taken by someone else.
func TestLostReplyIsNotRetried(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	proxy := testenv.StartAckDropProxy(t, opts.Addr, []byte(newScript(completeLua).hash))
	opts.Addr = proxy.Addr()
	opts.ContextTimeoutEnabled = true
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	require.Positive(t, client.Options().MaxRetries, "the client retries commands")
	s, err := New(t.Context(), client, WithPrefix(newPrefix(t, url)), WithAllowVolatile())
	require.NoError(t, err)
	ctx := t.Context()
	scope := storetest.NewScope()

	// The first completion loads the script, so the next is an EVALSHA.
	warm := storetest.MustReserve(t, s, scope, "warm", "fp", time.Minute)
	require.NoError(t, s.Complete(ctx, server.Completion{Reservation: warm, Response: storetest.JSONResponse(`{}`), Retention: time.Hour}))

	res := storetest.MustReserve(t, s, scope, "k", "fp", time.Minute)
	proxy.Arm()
	err = s.Complete(ctx, server.Completion{Reservation: res, Response: storetest.JSONResponse(`{}`), Retention: time.Hour})
	require.Error(t, err, "the reply was lost")
	assert.False(t, errors.Is(err, server.ErrFenced), "a second run would find the key completed and call it fenced: %v", err)
	assert.Equal(t, 1, proxy.Dropped())

	_, rec, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, server.StateCompleted, rec.State, "Redis ran the completion once")
}
