package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/pgpool"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	storetest.Run(t, func(t *testing.T) testserver.Store {
		return openStore(t, dsn, newSchema(t, dsn))
	})
	// Two pools on one schema stand for two replicas of the server.
	storetest.RunReplicas(t, func(t *testing.T) (a, b testserver.Store) {
		schema := newSchema(t, dsn)
		return openStore(t, dsn, schema), openStore(t, dsn, schema)
	})
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) testserver.Store {
		return openStore(t, dsn, newSchema(t, dsn), WithReservationGrace(grace))
	})
}

// A database failure in the middle of the transaction (a trigger raising
// an error) must leave neither half of the effect behind.
func TestEffectAndCompletionCommitTogether(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)

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
			scope := storetest.NewScope()

			res, _, err := s.Reserve(ctx, scope, "k", "fp", time.Minute)
			require.NoError(t, err)
			require.NotNil(t, res)
			p := storetest.NewPayment(scope.Principal)
			err = s.CreatePayment(ctx, p, &testserver.Completion{Reservation: *res, Response: storetest.JSONResponse("{}"), Retention: time.Hour})
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
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	ctx := t.Context()
	scope := storetest.NewScope()

	first, err := Open(ctx, dsn, WithSchema(schema))
	require.NoError(t, err)
	done, _, err := first.Reserve(ctx, scope, "done", "fp", time.Minute)
	require.NoError(t, err)
	p := storetest.NewPayment(scope.Principal)
	require.NoError(t, first.CreatePayment(ctx, p, &testserver.Completion{Reservation: *done, Response: storetest.JSONResponse("paid"), Retention: time.Hour}))
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
	require.NoError(t, second.Complete(ctx, testserver.Completion{Reservation: *pending, Response: storetest.JSONResponse("late"), Retention: time.Hour}),
		"the reservation's token still owns the key")
}

// Replicas starting together all create, or find, the same schema.
func TestConcurrentOpenCreatesTheSchemaOnce(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
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
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/test?sslmode=disable", testenv.ClosedPort(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Open(ctx, dsn, WithConnectTimeout(2*time.Second))
	require.Error(t, err)
	assert.Nil(t, s)
	assert.ErrorContains(t, err, "pgstore")
	assert.False(t, errors.Is(err, context.DeadlineExceeded), "the connect timeout, not the caller's deadline, must end the attempt: %v", err)
}

// When the database goes away under an open store, every call returns an
// error instead of hanging or panicking.
func TestDatabaseLostAfterOpenReturnsErrors(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	p := testenv.StartProxy(t, targetOf(t, dsn))
	s := openStore(t, dsnVia(t, dsn, p.Addr()), newSchema(t, dsn), WithConnectTimeout(2*time.Second))
	storetest.RunBackendLost(t, s, p.Cut)
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

func TestPoolSize(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	// The test DSN caps pools; the default shows on a DSN without the cap.
	s := openStore(t, testenv.DirectDSN(dsn), schema)
	assert.Equal(t, pgpool.DefaultMaxConns, s.Pool().Stat().MaxConns(), "the default pool covers concurrent requests, not CPUs")
	s = openStore(t, dsn, schema, WithMaxConns(5))
	assert.Equal(t, int32(5), s.Pool().Stat().MaxConns())
}

func TestRejectsBadArguments(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	s := openStore(t, dsn, newSchema(t, dsn))
	ctx := t.Context()
	scope := storetest.NewScope()

	_, _, err := s.Reserve(ctx, scope, "k", "fp", 0)
	assert.ErrorContains(t, err, "lease")
	_, _, err = s.Reserve(ctx, scope, "", "fp", time.Minute)
	assert.Error(t, err)
	storetest.AssertRejectsBadCompletions(t, s)
	assert.Error(t, s.CreatePayment(ctx, testserver.Payment{Principal: scope.Principal}, nil), "a payment needs an id")
	assert.Error(t, s.CreatePayment(ctx, testserver.Payment{ID: "pay_\x00", Principal: scope.Principal}, nil),
		"PostgreSQL text cannot hold a NUL byte; the store must say so, not panic")
}

// Sweep deletes in batches of exactly its limit, so a backlog drains in
// bounded statements, and leaves live records alone.
func TestSweepDrainsABacklogInBatches(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	s := openStore(t, dsn, newSchema(t, dsn))
	ctx := t.Context()
	scope := storetest.NewScope()
	complete := func(key string, retention time.Duration) {
		res, _, err := s.Reserve(ctx, scope, key, "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, testserver.Completion{Reservation: *res, Response: storetest.JSONResponse("{}"), Retention: retention}))
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
