package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	storetest.Run(t, func(t *testing.T) testserver.Store {
		return openStore(t, url, newPrefix(t, url))
	})
}

func newScope() testserver.Scope {
	return testserver.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

func newPayment(principal string) testserver.Payment {
	return testserver.Payment{
		ID: "pay_" + rand.Text(), Principal: principal, Amount: 100, Currency: "EUR",
		Status: "succeeded", Created: time.Now(),
	}
}

func response(body string) testserver.Response {
	return testserver.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(body),
	}
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

// Two clients on one prefix stand for two replicas of the server: for
// every key, exactly one of all their concurrent requests may win, and
// only the winner's payment exists.
func TestReplicasRacingForKeysGetOneWinnerEach(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	prefix := newPrefix(t, url)
	replicas := []*Store{openStore(t, url, prefix), openStore(t, url, prefix)}
	ctx := t.Context()
	scope := newScope()

	const keys, perReplica = 20, 8
	var wins [keys]int
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		for _, replica := range replicas {
			for range perReplica {
				wg.Go(func() {
					<-start
					res, _, err := replica.Reserve(ctx, scope, key, "fp", time.Minute)
					if !assert.NoError(t, err) || res == nil {
						return
					}
					p := newPayment(scope.Principal)
					c := &testserver.Completion{Reservation: *res, Response: response(p.ID), Retention: time.Hour}
					if assert.NoError(t, replica.CreatePayment(ctx, p, c)) {
						mu.Lock()
						wins[k]++
						mu.Unlock()
					}
				})
			}
		}
	}
	close(start)
	wg.Wait()

	for k, n := range wins {
		assert.Equal(t, 1, n, "key %d", k)
	}
	n, err := replicas[0].CountPayments(ctx)
	require.NoError(t, err)
	assert.Equal(t, keys, n, "one payment per key")
	list, err := replicas[1].ListPayments(ctx, scope.Principal)
	require.NoError(t, err)
	assert.Len(t, list, keys)
}

// A replica whose lease ran out is fenced once another replica took the
// key over: its payment and its completion are both refused.
func TestStaleReplicaIsFencedAfterTakeover(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	prefix := newPrefix(t, url)
	slow, fast := openStore(t, url, prefix), openStore(t, url, prefix)
	ctx := t.Context()
	scope, key := newScope(), "k"

	stale, _, err := slow.Reserve(ctx, scope, key, "fp", 50*time.Millisecond)
	require.NoError(t, err)
	require.NotNil(t, stale)

	var fresh *testserver.Reservation
	require.Eventually(t, func() bool {
		fresh, _, err = fast.Reserve(ctx, scope, key, "fp", time.Minute)
		return err == nil && fresh != nil
	}, 10*time.Second, 10*time.Millisecond, "the expired lease must be taken over")

	late := newPayment(scope.Principal)
	err = slow.CreatePayment(ctx, late, &testserver.Completion{Reservation: *stale, Response: response("late"), Retention: time.Hour})
	require.ErrorIs(t, err, testserver.ErrFenced)
	_, err = fast.GetPayment(ctx, scope.Principal, late.ID)
	assert.ErrorIs(t, err, testserver.ErrNotFound, "the stale replica's payment must not exist")
	assert.ErrorIs(t, slow.Release(ctx, *stale), testserver.ErrFenced)

	p := newPayment(scope.Principal)
	require.NoError(t, fast.CreatePayment(ctx, p, &testserver.Completion{Reservation: *fresh, Response: response("fresh"), Retention: time.Hour}))
	_, rec, err := slow.Reserve(ctx, scope, key, "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []byte("fresh"), rec.Response.Body)
}

// A script that fails on its checks writes nothing: with the record key
// corrupted (a string where a hash belongs), the payment is refused and
// no payment appears.
func TestFailedEffectScriptWritesNothing(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	prefix := newPrefix(t, url)
	s := openStore(t, url, prefix)
	ctx := t.Context()
	scope := newScope()

	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	recordKey := s.keys.record(scope, "k")
	require.NoError(t, rawClient(t, url).Set(ctx, recordKey, "corrupt", time.Minute).Err())

	p := newPayment(scope.Principal)
	err = s.CreatePayment(ctx, p, &testserver.Completion{Reservation: *res, Response: response("{}"), Retention: time.Hour})
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
	url := testURL(t)
	prefix := newPrefix(t, url)
	s := openStore(t, url, prefix, WithReservationGrace(0))
	raw := rawClient(t, url)
	ctx := t.Context()
	scope := newScope()

	done, _, err := s.Reserve(ctx, scope, "done", "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, testserver.Completion{Reservation: *done, Response: response("{}"), Retention: time.Hour}))
	ttl, err := raw.PTTL(ctx, s.keys.record(scope, "done")).Result()
	require.NoError(t, err)
	assert.Greater(t, ttl, 30*time.Minute, "a completed record expires after its retention")
	assert.LessOrEqual(t, ttl, time.Hour)

	_, _, err = s.Reserve(ctx, scope, "abandoned", "fp", 50*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n, err := raw.Exists(ctx, s.keys.record(scope, "abandoned")).Result()
		return err == nil && n == 0
	}, 10*time.Second, 10*time.Millisecond, "an abandoned reservation must expire")

	n, err := s.Sweep(ctx, 100)
	require.NoError(t, err)
	assert.Zero(t, n, "the completed record is not due and the reservation was never indexed")
}

func TestOpenUnreachableServerFails(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Open(ctx, "redis://127.0.0.1:"+closedPort(t)+"/0")
	require.Error(t, err)
	assert.Nil(t, s)
	assert.ErrorContains(t, err, "redisstore")
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the dial, not the caller's deadline, must end the attempt: %v", err)
}

// When Redis goes away under an open store, every call returns an error
// (which the server answers with 503) instead of hanging or panicking.
func TestServerLostAfterOpenReturnsErrors(t *testing.T) {
	t.Parallel()
	url := testURL(t)
	p := startProxy(t, targetOf(t, url))
	s := openStore(t, p.urlVia(t, url), newPrefix(t, url))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	scope := newScope()
	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)

	p.cut()

	_, _, err = s.Reserve(ctx, scope, "k2", "fp", time.Minute)
	assert.Error(t, err, "reserve")
	assert.Error(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Response: response("{}"), Retention: time.Hour}), "complete")
	assert.Error(t, s.Release(ctx, *res), "release")
	assert.Error(t, s.CreatePayment(ctx, newPayment(scope.Principal), nil), "create payment")
	_, err = s.ListPayments(ctx, scope.Principal)
	assert.Error(t, err, "list payments")
	assert.NoError(t, ctx.Err(), "the calls must fail on their own, not by running into the deadline")
}

func TestOpenRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for name, open := range map[string]func() (*Store, error){
		"empty prefix": func() (*Store, error) { return Open(ctx, "redis://127.0.0.1:6379/0", WithPrefix("")) },
		"negative grace": func() (*Store, error) {
			return Open(ctx, "redis://127.0.0.1:6379/0", WithReservationGrace(-time.Second))
		},
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
	url := testURL(t)
	s := openStore(t, url, newPrefix(t, url))
	ctx := t.Context()
	scope := newScope()

	_, _, err := s.Reserve(ctx, scope, "k", "fp", time.Microsecond)
	assert.ErrorContains(t, err, "lease")
	_, _, err = s.Reserve(ctx, scope, "k", "", time.Minute)
	assert.Error(t, err)
	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	assert.ErrorContains(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Response: response("{}")}), "retention")
	assert.ErrorContains(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Retention: time.Hour}), "status")
	assert.ErrorContains(t, s.CreatePayment(ctx, newPayment(scope.Principal), &testserver.Completion{Reservation: *res, Retention: time.Hour}), "status")
	assert.Error(t, s.CreateOperation(ctx, testserver.Operation{Principal: scope.Principal}, nil), "an operation needs an id")
}
