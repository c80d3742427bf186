package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	storetest.Run(t, func(t *testing.T) testserver.Store {
		return openStore(t, dsn, newSchema(t, dsn))
	})
}

func newScope() testserver.Scope {
	return testserver.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

func newPayment(principal string) testserver.Payment {
	return testserver.Payment{
		ID: "pay_" + rand.Text(), Principal: principal, Amount: 100, Currency: "EUR",
		Status: "succeeded", Created: time.Now().UTC().Truncate(time.Microsecond),
	}
}

func response(body string) testserver.Response {
	return testserver.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(body),
	}
}

// Two pools on one schema stand for two replicas of the server: for every
// key, exactly one of all their concurrent requests may win, and only the
// winner's payment exists.
func TestReplicasRacingForKeysGetOneWinnerEach(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	replicas := []*Store{openStore(t, dsn, schema), openStore(t, dsn, schema)}
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
}

// A replica whose lease ran out is fenced once another replica took the
// key over: its payment and its completion are both refused.
func TestStaleReplicaIsFencedAfterTakeover(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	slow, fast := openStore(t, dsn, schema), openStore(t, dsn, schema)
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

// A database failure in the middle of the transaction (a trigger raising
// an error) must leave neither half of the effect behind.
func TestEffectAndCompletionCommitTogether(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)

	for _, tc := range []struct {
		name, table, timing string
	}{
		{"payment insert fails", "payments", "BEFORE INSERT"},
		{"completion fails", "idempotency_records", "BEFORE UPDATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			schema := newSchema(t, dsn)
			s := openStore(t, dsn, schema)
			exec(t, dsn, fmt.Sprintf(`
CREATE FUNCTION %[1]s.fail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'injected fault'; END $$;
CREATE TRIGGER injected_fault %[2]s ON %[1]s.%[3]s FOR EACH ROW EXECUTE FUNCTION %[1]s.fail();`,
				schema, tc.timing, tc.table))
			ctx := t.Context()
			scope := newScope()

			res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
			require.NoError(t, err)
			require.NotNil(t, res)
			p := newPayment(scope.Principal)
			err = s.CreatePayment(ctx, p, &testserver.Completion{Reservation: *res, Response: response("{}"), Retention: time.Hour})
			require.ErrorContains(t, err, "injected fault")

			_, err = s.GetPayment(ctx, scope.Principal, p.ID)
			assert.ErrorIs(t, err, testserver.ErrNotFound, "no payment without its completion")
			_, rec, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
			require.NoError(t, err)
			require.NotNil(t, rec)
			assert.Equal(t, testserver.StateReserved, rec.State, "no completion without its payment")
			assert.Equal(t, res.Token, rec.Token, "the reservation is still the request's own")
		})
	}
}

// Everything a store wrote is there after it is closed and opened again,
// as after a server restart: completed keys replay, payments exist, and a
// reservation still belongs to its token.
func TestReopenKeepsEverything(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	ctx := t.Context()
	scope := newScope()

	first, err := Open(ctx, dsn, WithSchema(schema))
	require.NoError(t, err)
	done, _, err := first.Reserve(ctx, scope, "done", "fp", time.Minute)
	require.NoError(t, err)
	p := newPayment(scope.Principal)
	require.NoError(t, first.CreatePayment(ctx, p, &testserver.Completion{Reservation: *done, Response: response("paid"), Retention: time.Hour}))
	pending, _, err := first.Reserve(ctx, scope, "pending", "fp", time.Hour)
	require.NoError(t, err)
	require.NoError(t, first.Close())

	second := openStore(t, dsn, schema)
	_, rec, err := second.Reserve(ctx, scope, "done", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, testserver.StateCompleted, rec.State)
	assert.Equal(t, []byte("paid"), rec.Response.Body)
	got, err := second.GetPayment(ctx, scope.Principal, p.ID)
	require.NoError(t, err)
	assert.True(t, p.Created.Equal(got.Created))
	assert.Equal(t, p.Amount, got.Amount)

	_, rec, err = second.Reserve(ctx, scope, "pending", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec, "the reservation survives the restart")
	assert.Equal(t, testserver.StateReserved, rec.State)
	require.NoError(t, second.Complete(ctx, testserver.Completion{Reservation: *pending, Response: response("late"), Retention: time.Hour}),
		"the reservation's token still owns the key")
}

// Replicas starting together all create, or find, the same schema.
func TestConcurrentOpenCreatesTheSchemaOnce(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	const replicas = 6
	errs := make(chan error, replicas)
	for range replicas {
		go func() {
			s, err := Open(t.Context(), dsn, WithSchema(schema))
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range replicas {
		assert.NoError(t, <-errs)
	}
}

func TestOpenUnreachableDatabaseFails(t *testing.T) {
	t.Parallel()
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/test?sslmode=disable", closedPort(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Open(ctx, dsn, WithConnectTimeout(2*time.Second))
	require.Error(t, err)
	assert.Nil(t, s)
	assert.ErrorContains(t, err, "pgstore")
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the connect timeout, not the caller's deadline, must end the attempt: %v", err)
}

// When the database goes away under an open store, every call returns an
// error (which the server answers with 503) instead of hanging or
// panicking.
func TestDatabaseLostAfterOpenReturnsErrors(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	schema := newSchema(t, dsn)
	p := startProxy(t, targetOf(t, dsn))
	s := openStore(t, p.dsnVia(t, dsn), schema, WithConnectTimeout(2*time.Second))
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
	assert.Error(t, s.CreatePayment(ctx, newPayment(scope.Principal), nil), "create payment")
	_, err = s.CountPayments(ctx)
	assert.Error(t, err, "count payments")
	_, err = s.Sweep(ctx, 10)
	assert.Error(t, err, "sweep")
	assert.NoError(t, ctx.Err(), "the calls must fail on their own, not by running into the deadline")
}

func TestOpenRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for name, open := range map[string]func() (*Store, error){
		"bad schema": func() (*Store, error) {
			return Open(ctx, "postgres://127.0.0.1/test", WithSchema("Robert'); DROP TABLE"))
		},
		"empty schema":   func() (*Store, error) { return Open(ctx, "postgres://127.0.0.1/test", WithSchema("")) },
		"bad DSN":        func() (*Store, error) { return Open(ctx, "postgres://127.0.0.1/test?connect_timeout=soon") },
		"zero timeout":   func() (*Store, error) { return Open(ctx, "postgres://127.0.0.1/test", WithConnectTimeout(0)) },
		"negative conns": func() (*Store, error) { return Open(ctx, "postgres://127.0.0.1/test", WithMaxConns(-1)) },
		"not a postgres": func() (*Store, error) { return Open(ctx, "mysql://127.0.0.1/test") },
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
	dsn := testDSN(t)
	s := openStore(t, dsn, newSchema(t, dsn))
	ctx := t.Context()
	scope := newScope()

	_, _, err := s.Reserve(ctx, scope, "k", "fp", 0)
	assert.ErrorContains(t, err, "lease")
	_, _, err = s.Reserve(ctx, scope, "", "fp", time.Minute)
	assert.Error(t, err)
	res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	assert.ErrorContains(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Response: response("{}")}), "retention")
	assert.ErrorContains(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Retention: time.Hour}), "status")
	assert.Error(t, s.CreatePayment(ctx, testserver.Payment{Principal: scope.Principal}, nil), "a payment needs an id")
	assert.Error(t, s.CreatePayment(ctx, testserver.Payment{ID: "pay_\x00", Principal: scope.Principal}, nil),
		"PostgreSQL text cannot hold a NUL byte; the store must say so, not panic")
}

// Sweep deletes in batches of exactly its limit, so a backlog drains in
// bounded statements, and leaves live records alone.
func TestSweepDrainsABacklogInBatches(t *testing.T) {
	t.Parallel()
	dsn := testDSN(t)
	s := openStore(t, dsn, newSchema(t, dsn))
	ctx := t.Context()
	scope := newScope()
	complete := func(key string, retention time.Duration) {
		res, _, err := s.Reserve(ctx, scope, key, "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Response: response("{}"), Retention: retention}))
	}
	for i := range 25 {
		complete(fmt.Sprintf("old-%d", i), time.Millisecond)
	}
	complete("live", time.Hour)
	_, _, err := s.Reserve(ctx, scope, "pending", "fp", time.Millisecond)
	require.NoError(t, err)

	// Wait on the database clock until the whole backlog is due: the
	// newest old record is then past its retention.
	require.Eventually(t, func() bool {
		_, rec, err := s.Reserve(ctx, scope, "old-24", "other", time.Minute)
		return err == nil && rec == nil
	}, 10*time.Second, 5*time.Millisecond)

	var batches []int
	for {
		n, err := s.Sweep(ctx, 10)
		require.NoError(t, err)
		batches = append(batches, n)
		if n < 10 {
			break
		}
	}
	assert.Equal(t, []int{10, 10, 4}, batches, "old-24 was taken over, so 24 records are due")

	_, rec, err := s.Reserve(ctx, scope, "live", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, testserver.StateCompleted, rec.State, "a live record survives the sweep")
	_, rec, err = s.Reserve(ctx, scope, "pending", "other", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, testserver.StateReserved, rec.State, "a reservation survives the sweep")
}
