package redisstore

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

// hashForm writes the record of (scope, key) as the earlier versions of
// the store did, with raw commands: a hash, its expiry, its index entry.
func hashForm(t *testing.T, s *Store, scope server.Scope, key string, fields map[string]any, expires time.Time) {
	t.Helper()
	ctx := t.Context()
	rec := s.keys.record(scope, key)
	c := s.client
	require.NoError(t, c.HSet(ctx, rec, fields).Err())
	require.NoError(t, c.PExpireAt(ctx, rec, expires).Err())
	require.NoError(t, c.ZAdd(ctx, s.keys.expiries(scope.Principal), redis.Z{Score: float64(expires.UnixMilli()), Member: rec}).Err())
	require.Equal(t, "hash", c.Type(ctx, rec).Val())
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

// A store upgraded in place keeps the records the earlier hash form
// holds: it replays a completed one, completes or releases a reservation
// by its token (and fences another token), takes over an expired lease
// with the same payload, and sweeps the due ones. Each record it writes
// becomes a string.
func TestHashFormRecordsAreReadAndUpgraded(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	s := openStore(t, url, newPrefix(t, url))
	ctx := t.Context()
	scope := storetest.NewScope()
	fp, now := storetest.FingerprintOf(`{"a":1}`), time.Now()
	header := http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/pay_1"}}
	encoded, err := server.EncodeHeader(header)
	require.NoError(t, err)

	t.Run("CompletedIsReplayed", func(t *testing.T) {
		key := storetest.NewKey()
		hashForm(t, s, scope, key, map[string]any{
			"state": "completed", "fp": fp, "created": ms(now), "expires": ms(now.Add(time.Hour)),
			"status": 201, "header": encoded, "body": `{"id":"pay_1"}`, "rid": "pay_1",
		}, now.Add(time.Hour))
		res, rec, err := s.Reserve(ctx, scope, key, fp, time.Minute)
		require.NoError(t, err)
		require.Nil(t, res, "a completed record is never reserved again")
		require.NotNil(t, rec)
		assert.Equal(t, server.StateCompleted, rec.State)
		assert.Equal(t, fp, rec.Fingerprint)
		assert.Equal(t, now.UnixMilli(), rec.CreatedAt.UnixMilli())
		storetest.AssertSameResponse(t, server.Response{Status: 201, Header: header, Body: []byte(`{"id":"pay_1"}`), ResourceID: "pay_1"}, rec.Response)
	})

	reserved := func(t *testing.T, key, token string, lease time.Time) {
		hashForm(t, s, scope, key, map[string]any{
			"state": "reserved", "token": token, "lease": ms(lease), "fp": fp, "created": ms(now),
		}, lease.Add(time.Hour))
	}

	t.Run("ReservationIsCompletedByItsToken", func(t *testing.T) {
		key := storetest.NewKey()
		reserved(t, key, "tok_old", now.Add(time.Hour))
		found := storetest.MustFind(t, s, scope, key, fp)
		assert.Equal(t, server.StateReserved, found.State)
		assert.Equal(t, "tok_old", found.Token)

		resp := server.Response{Status: 201, Header: header, Body: []byte(`{"id":"pay_2"}`), ResourceID: "pay_2"}
		stale := server.Reservation{Scope: scope, Key: key, Fingerprint: fp, Token: "tok_other"}
		assert.ErrorIs(t, s.Complete(ctx, server.Completion{Reservation: stale, Response: resp, Retention: time.Hour}), server.ErrFenced)
		own := stale
		own.Token = "tok_old"
		require.NoError(t, s.Complete(ctx, server.Completion{Reservation: own, Response: resp, Retention: time.Hour}))
		assert.Equal(t, "string", s.client.Type(ctx, s.keys.record(scope, key)).Val(), "the completion is written in the string form")

		rec := storetest.MustFind(t, s, scope, key, fp)
		assert.Equal(t, server.StateCompleted, rec.State)
		assert.Equal(t, fp, rec.Fingerprint, "the fingerprint carries over")
		assert.Equal(t, now.UnixMilli(), rec.CreatedAt.UnixMilli(), "the creation time carries over")
		storetest.AssertSameResponse(t, resp, rec.Response)
	})

	t.Run("ReservationIsReleasedByItsToken", func(t *testing.T) {
		key := storetest.NewKey()
		reserved(t, key, "tok_old", now.Add(time.Hour))
		stale := server.Reservation{Scope: scope, Key: key, Fingerprint: fp, Token: "tok_other"}
		assert.ErrorIs(t, s.Release(ctx, stale), server.ErrFenced)
		own := stale
		own.Token = "tok_old"
		require.NoError(t, s.Release(ctx, own))
		storetest.MustReserve(t, s, scope, key, storetest.FingerprintOf("other"), time.Minute)
	})

	t.Run("ExpiredLeaseIsTakenOver", func(t *testing.T) {
		key := storetest.NewKey()
		reserved(t, key, "tok_old", now.Add(-time.Minute))
		_, rec, err := s.Reserve(ctx, scope, key, storetest.FingerprintOf("other"), time.Minute)
		require.NoError(t, err)
		require.NotNil(t, rec, "another payload meets the reservation")
		assert.Equal(t, fp, rec.Fingerprint)
		res := storetest.MustReserve(t, s, scope, key, fp, time.Minute)
		assert.NotEqual(t, "tok_old", res.Token)
		assert.Equal(t, "string", s.client.Type(ctx, s.keys.record(scope, key)).Val())
	})
}

// Sweep counts and deletes due records of the hash form and leaves the
// others.
func TestHashFormRecordsAreSwept(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	s := openStore(t, url, newPrefix(t, url))
	ctx := t.Context()
	scope, fp, now := storetest.NewScope(), storetest.FingerprintOf(`{"a":1}`), time.Now()

	// An abandoned reservation whose index entry is due and whose key
	// Redis has not dropped yet (its expiry is further off).
	abandoned := storetest.NewKey()
	hashForm(t, s, scope, abandoned, map[string]any{
		"state": "reserved", "token": "tok", "lease": ms(now.Add(-time.Minute)), "fp": fp, "created": ms(now),
	}, now.Add(time.Hour))
	require.NoError(t, s.client.ZAdd(ctx, s.keys.expiries(scope.Principal),
		redis.Z{Score: float64(now.Add(-time.Second).UnixMilli()), Member: s.keys.record(scope, abandoned)}).Err())
	live := storetest.NewKey()
	hashForm(t, s, scope, live, map[string]any{
		"state": "reserved", "token": "tok", "lease": ms(now.Add(time.Hour)), "fp": fp, "created": ms(now),
	}, now.Add(2*time.Hour))

	n, err := s.Sweep(ctx, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the abandoned reservation is swept")
	assert.Zero(t, s.client.Exists(ctx, s.keys.record(scope, abandoned)).Val())
	assert.Equal(t, server.StateReserved, storetest.MustFind(t, s, scope, live, storetest.FingerprintOf("other")).State)
}
