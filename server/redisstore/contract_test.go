package redisstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	storetest.Run(t, func(t *testing.T) server.Store { return openStore(t, url, newPrefix(t, url)) })
	storetest.RunLegacyFingerprints(t, func(t *testing.T) server.Store { return openStore(t, url, newPrefix(t, url)) })
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) server.Store {
		return openStore(t, url, newPrefix(t, url), WithReservationGrace(grace))
	})
}

// An effect commits with the completion, is refused by its check with
// nothing written, and a stale owner's effect is fenced.
func TestCommitEffect(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	s := openStore(t, url, newPrefix(t, url))
	ctx := t.Context()
	counter := s.Prefix() + "orders"
	incr := NewEffect(`if redis.call('GET', KEYS[1]) == ARGV[1] then return 'full' end`, `redis.call('INCR', KEYS[1])`)
	scope := storetest.NewScope()
	completion := func(res *server.Reservation) *server.Completion {
		return &server.Completion{Reservation: *res, Response: storetest.JSONResponse("{}"), Retention: time.Hour}
	}

	stale, _, err := s.Reserve(ctx, scope, "k", "fp", time.Millisecond)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	fresh, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, fresh)
	require.ErrorIs(t, s.CommitEffect(ctx, incr, completion(stale), []string{counter}, "5"), server.ErrFenced)

	require.NoError(t, s.CommitEffect(ctx, incr, completion(fresh), []string{counter}, "5"))
	n, err := s.Client().Get(ctx, counter).Int()
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	_, rec, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, server.StateCompleted, rec.State, "the key completed with the effect")

	other, _, err := s.Reserve(ctx, scope, "k2", "fp", time.Minute)
	require.NoError(t, err)
	err = s.CommitEffect(ctx, incr, completion(other), []string{counter}, "1")
	require.True(t, errors.Is(err, ErrEffectRefused), "got %v", err)
	_, rec, err = s.Reserve(ctx, scope, "k2", "fp", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, server.StateReserved, rec.State, "a refused effect leaves the key reserved")

	require.NoError(t, s.CommitEffect(ctx, incr, nil, []string{counter}, "5"), "an effect without a key")
	n, _ = s.Client().Get(ctx, counter).Int()
	assert.Equal(t, 2, n)
}
