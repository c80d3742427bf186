package server_test

import (
	"context"
	"errors"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// timedOnce runs Once for id and says how long it took and how often fn ran.
func timedOnce(ctx context.Context, store server.Store, id string, fn func(context.Context) ([]byte, error), opts ...server.Option) ([]byte, time.Duration, error) {
	start := time.Now()
	got, err := server.Once(ctx, store, onceScope, id, "fp", fn, opts...)
	return got, time.Since(start), err
}

// requireStoreTimeout checks err is the typed stall of op, answered
// within twice the bound.
func requireStoreTimeout(t *testing.T, err error, op string, bound, took time.Duration) {
	t.Helper()
	require.ErrorIs(t, err, server.ErrStoreTimeout)
	var st *server.StoreTimeoutError
	require.ErrorAs(t, err, &st)
	assert.Equal(t, op, st.Op)
	assert.Equal(t, bound, st.Timeout)
	require.GreaterOrEqual(t, took, bound/2)
	require.Less(t, took, 2*bound, "a stalled store must be given up on within the bound")
}

// countRuns returns fn counting its runs into n, answering result.
func countRuns(n *atomic.Int32, result string) func(context.Context) ([]byte, error) {
	return func(context.Context) ([]byte, error) { n.Add(1); return []byte(result), nil }
}

// TestOnceStoreTimeoutWithStalledPostgres reaches a real Postgres store
// through a proxy that stops forwarding, first before Reserve, then while
// fn runs, so that storing its result stalls.
func TestOnceStoreTimeoutWithStalledPostgres(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	store, err := pgstore.Open(t.Context(), u.String(), pgstore.WithSchema(testenv.PostgresSchema(t, dsn, "idemtest_")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	bound := server.WithStoreTimeout(testStoreTimeout)
	var runs atomic.Int32

	got, _, err := timedOnce(t.Context(), store, "m-before", countRuns(&runs, "done"), bound)
	require.NoError(t, err, "the store works before the stall")
	require.Equal(t, "done", string(got))

	proxy.Pause()
	_, took, err := timedOnce(t.Context(), store, "m-stalled", countRuns(&runs, "never"), bound)
	requireStoreTimeout(t, err, "reserve", testStoreTimeout, took)
	require.EqualValues(t, 1, runs.Load(), "fn does not run while the store stalls")
	proxy.Resume()

	_, took, err = timedOnce(t.Context(), store, "m-complete", func(context.Context) ([]byte, error) {
		runs.Add(1)
		proxy.Pause() // the effect is done; the store stops answering
		return []byte("shipped"), nil
	}, bound)
	requireStoreTimeout(t, err, "complete", testStoreTimeout, took)
	require.EqualValues(t, 2, runs.Load())
	proxy.Resume()

	// Whether the held completion reached the database is unknown; either
	// way the id is not run again within its lease. The pool may have to
	// dial again after the stall, which on a loaded host takes longer than
	// the short bound: this call only asks what the store holds.
	got, err = server.Once(t.Context(), store, onceScope, "m-complete", "fp", countRuns(&runs, "again"), server.WithStoreTimeout(30*time.Second))
	if err == nil {
		assert.Equal(t, "shipped", string(got))
	} else {
		require.ErrorIs(t, err, server.ErrInProgress)
	}
	require.EqualValues(t, 2, runs.Load())
}

func TestOnceStoreTimeoutWithStalledReserve(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	var runs atomic.Int32
	_, took, err := timedOnce(t.Context(), stallingStore{mem}, "m-1", countRuns(&runs, "never"), server.WithStoreTimeout(testStoreTimeout))
	requireStoreTimeout(t, err, "reserve", testStoreTimeout, took)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Zero(t, runs.Load())
}

// TestOnceStoreTimeoutByDefault: without the option a stalled store is
// given up on after DefaultStoreTimeout.
func TestOnceStoreTimeoutByDefault(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	var runs atomic.Int32
	_, took, err := timedOnce(t.Context(), stallingStore{mem}, "m-1", countRuns(&runs, "never"))
	requireStoreTimeout(t, err, "reserve", server.DefaultStoreTimeout, took)
	require.Zero(t, runs.Load())
}

// TestOnceCallerDeadlineIsNotAStoreTimeout: the caller's own context
// ending is returned as such, not blamed on the store.
func TestOnceCallerDeadlineIsNotAStoreTimeout(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	var runs atomic.Int32
	_, _, err := timedOnce(ctx, stallingStore{mem}, "m-1", countRuns(&runs, "never"), server.WithStoreTimeout(time.Minute))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, server.ErrStoreTimeout)
	require.Zero(t, runs.Load())
}

func TestOnceStoreTimeoutBoundsStoringTheResult(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	var runs atomic.Int32
	_, took, err := timedOnce(t.Context(), stallingCompleteStore{mem}, "m-1", countRuns(&runs, "done"), server.WithStoreTimeout(testStoreTimeout))
	requireStoreTimeout(t, err, "complete", testStoreTimeout, took)
	require.EqualValues(t, 1, runs.Load())
}

// TestOnceLeaseBoundsStoringTheResult: past the lease the id is another
// consumer's, so settling never waits longer than the lease.
func TestOnceLeaseBoundsStoringTheResult(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	var runs atomic.Int32
	_, took, err := timedOnce(t.Context(), stallingCompleteStore{mem}, "m-1", countRuns(&runs, "done"),
		server.WithStoreTimeout(time.Minute), server.WithLease(testStoreTimeout))
	requireStoreTimeout(t, err, "complete", testStoreTimeout, took)
}

// stallingReleaseStore is a real memory store whose Release blocks until
// its context ends.
type stallingReleaseStore struct{ *server.MemoryStore }

func (s stallingReleaseStore) Release(ctx context.Context, _ server.Reservation) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestOnceStoreTimeoutBoundsReleasingTheID(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	boom := errors.New("boom")
	_, took, err := timedOnce(t.Context(), stallingReleaseStore{mem}, "m-1", func(context.Context) ([]byte, error) { return nil, boom },
		server.WithStoreTimeout(testStoreTimeout))
	require.ErrorIs(t, err, boom, "fn's own error is kept")
	requireStoreTimeout(t, err, "release", testStoreTimeout, took)
}
