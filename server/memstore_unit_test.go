package server_test

import (
	"context"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

var memScope = server.Scope{Principal: "tok", Method: http.MethodPost, Route: paymentsRoute}

func newClockedStore(t *testing.T) (*server.MemoryStore, *manualClock) {
	t.Helper()
	clock := newManualClock()
	s := server.NewMemoryStore(server.WithClock(clock.Now))
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

func completion(res server.Reservation, body string, retention time.Duration) server.Completion {
	return server.Completion{
		Reservation: res,
		Response:    server.Response{Status: http.StatusCreated, Body: []byte(body)},
		Retention:   retention,
	}
}

func TestMemoryStoreStaleOwnerIsFenced(t *testing.T) {
	t.Parallel()
	s, clock := newClockedStore(t)
	ctx := t.Context()
	fp := fp(`{"a":1}`)

	a, _, err := s.Reserve(ctx, memScope, "k", fp, 30*time.Second)
	require.NoError(t, err)
	require.NotNil(t, a)

	clock.Advance(30*time.Second - time.Nanosecond)
	b, rec, err := s.Reserve(ctx, memScope, "k", fp, 30*time.Second)
	require.NoError(t, err)
	require.Nil(t, b, "the lease holds until it expires")
	assert.Equal(t, clock.Now().Add(time.Nanosecond), rec.LeaseExpires)

	clock.Advance(time.Nanosecond)
	b, _, err = s.Reserve(ctx, memScope, "k", fp, 30*time.Second)
	require.NoError(t, err)
	require.NotNil(t, b, "an expired lease is taken over")
	assert.NotEqual(t, a.Token, b.Token)

	require.NoError(t, s.Complete(ctx, completion(*b, "B", time.Hour)))
	assert.ErrorIs(t, s.Complete(ctx, completion(*a, "A", time.Hour)), server.ErrFenced)
	assert.ErrorIs(t, s.Release(ctx, *a), server.ErrFenced)

	_, rec, err = s.Reserve(ctx, memScope, "k", fp, 30*time.Second)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, "B", string(rec.Response.Body), "the stored result is the new owner's")
	assert.Equal(t, clock.Now().Add(time.Hour), rec.ExpiresAt)
}

func TestMemoryStoreRetentionBoundary(t *testing.T) {
	t.Parallel()
	s, clock := newClockedStore(t)
	ctx := t.Context()
	res, _, err := s.Reserve(ctx, memScope, "k", fp("x"), time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, completion(*res, "done", time.Hour)))

	clock.Advance(time.Hour - time.Nanosecond)
	n, err := s.Sweep(ctx, 10)
	require.NoError(t, err)
	assert.Zero(t, n, "not yet past retention")
	again, _, err := s.Reserve(ctx, memScope, "k", fp("x"), time.Minute)
	require.NoError(t, err)
	assert.Nil(t, again)

	clock.Advance(time.Nanosecond)
	n, err = s.Sweep(ctx, 10)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

func TestMemoryStoreReservationGraceBoundary(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opts  []server.MemoryOption
		grace time.Duration
	}{
		"default":              {nil, server.DefaultReservationGrace},
		"configured":           {[]server.MemoryOption{server.WithReservationGrace(5 * time.Minute)}, 5 * time.Minute},
		"non-positive ignored": {[]server.MemoryOption{server.WithReservationGrace(-time.Second)}, server.DefaultReservationGrace},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := newManualClock()
			s := server.NewMemoryStore(append(tc.opts, server.WithClock(clock.Now))...)
			t.Cleanup(func() { _ = s.Close() })
			ctx := t.Context()
			_, _, err := s.Reserve(ctx, memScope, "k", fp("x"), time.Minute)
			require.NoError(t, err)

			clock.Advance(time.Minute + tc.grace - time.Nanosecond)
			n, err := s.Sweep(ctx, 10)
			require.NoError(t, err)
			assert.Zero(t, n, "within the grace the reservation stays")

			clock.Advance(time.Nanosecond)
			n, err = s.Sweep(ctx, 10)
			require.NoError(t, err)
			assert.Equal(t, 1, n, "past the grace the reservation is abandoned")
			res, _, err := s.Reserve(ctx, memScope, "k", fp("another payload"), time.Minute)
			require.NoError(t, err)
			assert.NotNil(t, res, "a swept key is free for any payload")
		})
	}
}

func TestMemoryStoreTokensAre128BitHex(t *testing.T) {
	t.Parallel()
	s, _ := newClockedStore(t)
	hex128 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := make(map[string]bool)
	for i := range 200 {
		res, _, err := s.Reserve(t.Context(), memScope, "k"+string(rune('A'+i%26))+string(rune('a'+i/26)), fp("x"), time.Minute)
		require.NoError(t, err)
		require.NotNil(t, res)
		assert.Regexp(t, hex128, res.Token)
		assert.False(t, seen[res.Token])
		seen[res.Token] = true
	}
}

func TestMemoryStoreRejectsBadInput(t *testing.T) {
	t.Parallel()
	s, _ := newClockedStore(t)
	ctx := t.Context()
	_, _, err := s.Reserve(ctx, memScope, "", fp("x"), time.Minute)
	assert.Error(t, err, "empty key")
	_, _, err = s.Reserve(ctx, memScope, "k", "", time.Minute)
	assert.Error(t, err, "empty fingerprint")
	_, _, err = s.Reserve(ctx, memScope, "k", fp("x"), 0)
	assert.Error(t, err, "zero lease")

	res, _, err := s.Reserve(ctx, memScope, "k", fp("x"), time.Minute)
	require.NoError(t, err)
	assert.Error(t, s.Complete(ctx, completion(*res, "", 0)), "zero retention")
	bad := completion(*res, "", time.Hour)
	bad.Response.Status = 0
	assert.Error(t, s.Complete(ctx, bad), "no status")
	assert.NoError(t, s.Complete(ctx, completion(*res, "", time.Hour)), "failed calls wrote nothing")
}

func TestMemoryStoreFailsAfterClose(t *testing.T) {
	t.Parallel()
	s := server.NewMemoryStore()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")
	ctx := context.Background()
	_, _, err := s.Reserve(ctx, memScope, "k", fp("x"), time.Minute)
	assert.Error(t, err)
	_, err = s.Sweep(ctx, 1)
	assert.Error(t, err)
	_, err = s.Lookup(ctx, memScope, "k")
	assert.Error(t, err)
}

func BenchmarkMemoryStoreReserveComplete(b *testing.B) {
	s := server.NewMemoryStore()
	ctx := context.Background()
	fingerprint := fp(`{"a":1}`)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := newBenchKey(int(next.Add(1)))
			res, _, err := s.Reserve(ctx, memScope, key, fingerprint, time.Minute)
			if err != nil || res == nil {
				b.Errorf("reserve %s: %v", key, err)
				return
			}
			if err := s.Complete(ctx, completion(*res, "{}", time.Hour)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
