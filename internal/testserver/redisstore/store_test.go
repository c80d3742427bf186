package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	storetest.Run(t, func(t *testing.T) testserver.Store {
		return openStore(t, url, newPrefix(t, url))
	})
	// Two clients on one prefix stand for two replicas of the server.
	storetest.RunReplicas(t, func(t *testing.T) (a, b testserver.Store) {
		prefix := newPrefix(t, url)
		return openStore(t, url, prefix), openStore(t, url, prefix)
	})
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) testserver.Store {
		return openStore(t, url, newPrefix(t, url), WithReservationGrace(grace))
	})
}

// A script that fails on its checks writes nothing: with the record key
// corrupted (a set where a record's string, or an earlier version's hash,
// belongs), the payment is refused and no payment appears.
func TestFailedEffectScriptWritesNothing(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	prefix := newPrefix(t, url)
	s := openStore(t, url, prefix)
	ctx := t.Context()
	scope := storetest.NewScope()

	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	recordKey := s.RecordKey(scope, "k")
	raw := rawClient(t, url)
	require.NoError(t, raw.Del(ctx, recordKey).Err())
	require.NoError(t, raw.SAdd(ctx, recordKey, "corrupt").Err())

	p := storetest.NewPayment(scope.Principal)
	err = s.CreatePayment(ctx, p, &testserver.Completion{Reservation: *res, Response: storetest.JSONResponse("{}"), Retention: time.Hour})
	require.ErrorContains(t, err, "WRONGTYPE")
	_, err = s.GetPayment(ctx, scope.Principal, p.ID)
	assert.ErrorIs(t, err, testserver.ErrNotFound)
	n, err := s.CountPayments(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// Retention is Redis's own key expiry: a completed record carries a TTL of
// its retention, and an abandoned reservation expires after its lease plus
// the grace period.
func TestRecordsExpireOnTheServer(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	prefix := newPrefix(t, url)
	s := openStore(t, url, prefix, WithReservationGrace(time.Millisecond))
	raw := rawClient(t, url)
	ctx := t.Context()
	scope := storetest.NewScope()

	done, _, err := s.Reserve(ctx, scope, "done", "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, testserver.Completion{Reservation: *done, Response: storetest.JSONResponse("{}"), Retention: time.Hour}))
	ttl, err := raw.PTTL(ctx, s.RecordKey(scope, "done")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 30*time.Minute, "a completed record expires after its retention")
	assert.LessOrEqual(t, ttl, time.Hour)

	_, _, err = s.Reserve(ctx, scope, "abandoned", "fp", 50*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := raw.Exists(ctx, s.RecordKey(scope, "abandoned")).Result()
		return err == nil && n == 0
	}, 10*time.Second, 10*time.Millisecond, "an abandoned reservation must expire")

	n, err := s.Sweep(ctx, 100)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the reservation Redis dropped is counted; the completed record is not due")
}

func TestOpenUnreachableServerFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Open(ctx, "redis://127.0.0.1:"+testenv.ClosedPort(t)+"/0")
	require.Error(t, err)
	assert.Nil(t, s)
	assert.ErrorContains(t, err, "redisstore")
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the dial, not the caller's deadline, must end the attempt: %v", err)
}

// When Redis goes away under an open store, every call returns an error
// instead of hanging or panicking.
func TestServerLostAfterOpenReturnsErrors(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	p := testenv.StartProxy(t, targetOf(t, url))
	s := openStore(t, urlVia(t, url, p.Addr()), newPrefix(t, url))
	storetest.RunBackendLost(t, s, p.Cut)
}

func TestOpenRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for name, open := range map[string]func() (*Store, error){
		"empty prefix": func() (*Store, error) { return Open(ctx, "redis://127.0.0.1:6379/0", WithPrefix("")) },
		"negative grace": func() (*Store, error) {
			return Open(ctx, "redis://127.0.0.1:6379/0", WithReservationGrace(-time.Second))
		},
		"no grace":     func() (*Store, error) { return Open(ctx, "redis://127.0.0.1:6379/0", WithReservationGrace(0)) },
		"bad scheme":   func() (*Store, error) { return Open(ctx, "http://127.0.0.1:6379/0") },
		"bad database": func() (*Store, error) { return Open(ctx, "redis://127.0.0.1:6379/zero") },
	} {
		t.Run(name, func(t *testing.T) {
			s, err := open()
			assert.Error(t, err)
			assert.Nil(t, s)
		})
	}
}

func TestRejectsBadArguments(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	s := openStore(t, url, newPrefix(t, url))
	ctx := t.Context()
	scope := storetest.NewScope()

	_, _, err := s.Reserve(ctx, scope, "k", "fp", time.Microsecond)
	assert.ErrorContains(t, err, "lease")
	_, _, err = s.Reserve(ctx, scope, "k", "", time.Minute)
	assert.Error(t, err)
	storetest.AssertRejectsBadCompletions(t, s)
	assert.Error(t, s.CreateOperation(ctx, testserver.Operation{Principal: scope.Principal}, nil), "an operation needs an id")
}
