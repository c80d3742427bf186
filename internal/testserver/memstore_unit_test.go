package testserver_test

import (
	"context"
	"net/http"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

var memScope = testserver.Scope{Principal: "tok", Method: http.MethodPost, Route: paymentsRoute}

func newClockedStore(t *testing.T) (*testserver.MemoryStore, *testserver.ManualClock) {
	t.Helper()
	clock := testserver.NewManualClock()
	s := testserver.NewMemoryStore(testserver.WithClock(clock.Now))
	t.Cleanup(func() { _ = s.Close() })
	return s, clock
}

func completion(res testserver.Reservation, body string, retention time.Duration) testserver.Completion {
	return testserver.Completion{
		Reservation: res,
		Response:    testserver.Response{Status: http.StatusCreated, Body: []byte(body)},
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
	assert.ErrorIs(t, s.Complete(ctx, completion(*a, "A", time.Hour)), testserver.ErrFenced)
	assert.ErrorIs(t, s.Release(ctx, *a), testserver.ErrFenced)

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
		opts  []testserver.MemoryOption
		grace time.Duration
	}{
		"default":              {nil, testserver.DefaultReservationGrace},
		"configured":           {[]testserver.MemoryOption{testserver.WithReservationGrace(5 * time.Minute)}, 5 * time.Minute},
		"non-positive ignored": {[]testserver.MemoryOption{testserver.WithReservationGrace(-time.Second)}, testserver.DefaultReservationGrace},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clock := testserver.NewManualClock()
			s := testserver.NewMemoryStore(append(tc.opts, testserver.WithClock(clock.Now))...)
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

	assert.Error(t, s.CreatePayment(ctx, testserver.Payment{}, nil), "payment without id")
	assert.Error(t, s.CreateOperation(ctx, testserver.Operation{}, nil), "operation without id")
}

func TestMemoryStoreListsEqualTimesNewestInsertFirst(t *testing.T) {
	t.Parallel()
	s, clock := newClockedStore(t)
	ctx := t.Context()
	for _, id := range []string{"pay_a", "pay_b", "pay_c"} {
		require.NoError(t, s.CreatePayment(ctx, testserver.Payment{ID: id, Principal: "tok", Created: clock.Now()}, nil))
	}
	list, err := s.ListPayments(ctx, "tok")
	require.NoError(t, err)
	require.Len(t, list, 3)
	assert.Equal(t, []string{"pay_c", "pay_b", "pay_a"}, []string{list[0].ID, list[1].ID, list[2].ID})
}

func TestMemoryStoreFailsAfterClose(t *testing.T) {
	t.Parallel()
	s := testserver.NewMemoryStore()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")
	ctx := context.Background()
	_, _, err := s.Reserve(ctx, memScope, "k", fp("x"), time.Minute)
	assert.Error(t, err)
	_, err = s.Sweep(ctx, 1)
	assert.Error(t, err)
	_, err = s.CountPayments(ctx)
	assert.Error(t, err)
	_, err = s.GetPayment(ctx, "tok", "pay_x")
	assert.Error(t, err)
	assert.NotErrorIs(t, err, testserver.ErrNotFound, "a closed store is not an empty one")
}

func BenchmarkMemoryStoreReserveComplete(b *testing.B) {
	s := testserver.NewMemoryStore()
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
