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

// onceStarted runs Once for id and says when the test started it.
func onceStarted(ctx context.Context, store server.Store, id string, fn func(context.Context) ([]byte, error), opts ...server.Option) ([]byte, time.Time, error) {
	start := time.Now()
	got, err := server.Once(ctx, store, onceScope, id, "fp", fn, opts...)
	return got, start, err
}

// requireStoreTimeout checks err is the typed stall of op under bound,
// and that each stalled call of op was given bound from when Once
// started on it and was ended by it (requireEndedByBound).
func requireStoreTimeout(t *testing.T, err error, seen *storeCalls, op string, started time.Time, bound time.Duration) {
	t.Helper()
	require.ErrorIs(t, err, server.ErrStoreTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var st *server.StoreTimeoutError
	require.ErrorAs(t, err, &st)
	assert.Equal(t, op, st.Op)
	assert.Equal(t, bound, st.Timeout)
	requireEndedByBound(t, seen, op, started, bound)
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
	pg, err := pgstore.Open(t.Context(), u.String(), pgstore.WithSchema(testenv.PostgresSchema(t, dsn, "idemtest_")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Close() })
	t.Cleanup(proxy.Resume) // first: a store call the test left stalled ends, so Close does not wait on it
	seen := newStoreCalls()
	store := watchedStore{pg, seen}
	bound := server.WithStoreTimeout(testStoreTimeout)
	var runs atomic.Int32
	// Only stops a hang: the caller's context never ends a call first.
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()

	got, _, err := onceStarted(ctx, store, "m-before", countRuns(&runs, "done"), bound)
	require.NoError(t, err, "the store works before the stall")
	require.Equal(t, "done", string(got))

	seen.reset()
	proxy.Pause()
	_, started, err := onceStarted(ctx, store, "m-stalled", countRuns(&runs, "never"), bound)
	requireStoreTimeout(t, err, seen, "reserve", started, testStoreTimeout)
	require.EqualValues(t, 1, runs.Load(), "fn does not run while the store stalls")
	proxy.Resume()

	seen.reset()
	_, started, err = onceStarted(ctx, store, "m-complete", func(context.Context) ([]byte, error) {
		runs.Add(1)
		proxy.Pause() // the effect is done; the store stops answering
		return []byte("shipped"), nil
	}, bound)
	requireStoreTimeout(t, err, seen, "complete", started, testStoreTimeout)
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
	seen := newStoreCalls()
	var runs atomic.Int32
	_, started, err := onceStarted(t.Context(), stallingStore{mem, seen}, "m-1", countRuns(&runs, "never"), server.WithStoreTimeout(testStoreTimeout))
	requireStoreTimeout(t, err, seen, "reserve", started, testStoreTimeout)
	require.Zero(t, runs.Load())
}

// TestOnceStoreTimeoutByDefault: without the option a stalled store is
// given up on after DefaultStoreTimeout.
func TestOnceStoreTimeoutByDefault(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	seen := newStoreCalls()
	var runs atomic.Int32
	_, started, err := onceStarted(t.Context(), stallingStore{mem, seen}, "m-1", countRuns(&runs, "never"))
	requireStoreTimeout(t, err, seen, "reserve", started, server.DefaultStoreTimeout)
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
	callerDeadline, _ := ctx.Deadline()
	seen := newStoreCalls()
	var runs atomic.Int32
	_, _, err := onceStarted(ctx, stallingStore{mem, seen}, "m-1", countRuns(&runs, "never"), server.WithStoreTimeout(time.Minute))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, server.ErrStoreTimeout)
	require.Zero(t, runs.Load())
	calls := seen.of("reserve")
	require.Len(t, calls, 1)
	assert.Equal(t, callerDeadline, calls[0].deadline, "the caller's nearer deadline is the store call's")
}

func TestOnceStoreTimeoutBoundsStoringTheResult(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	seen := newStoreCalls()
	var runs atomic.Int32
	_, started, err := onceStarted(t.Context(), stallingCompleteStore{mem, seen}, "m-1", countRuns(&runs, "done"), server.WithStoreTimeout(testStoreTimeout))
	requireStoreTimeout(t, err, seen, "complete", started, testStoreTimeout)
	require.EqualValues(t, 1, runs.Load())
}

// TestOnceLeaseBoundsStoringTheResult: past the lease the id is another
// consumer's, so settling never waits longer than the lease.
func TestOnceLeaseBoundsStoringTheResult(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	seen := newStoreCalls()
	var runs atomic.Int32
	_, started, err := onceStarted(t.Context(), stallingCompleteStore{mem, seen}, "m-1", countRuns(&runs, "done"),
		server.WithStoreTimeout(time.Minute), server.WithLease(testStoreTimeout))
	requireStoreTimeout(t, err, seen, "complete", started, testStoreTimeout)
}

func TestOnceStoreTimeoutBoundsReleasingTheID(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	seen := newStoreCalls()
	boom := errors.New("boom")
	_, started, err := onceStarted(t.Context(), stallingReleaseStore{mem, seen}, "m-1", func(context.Context) ([]byte, error) { return nil, boom },
		server.WithStoreTimeout(testStoreTimeout))
	require.ErrorIs(t, err, boom, "fn's own error is kept")
	requireStoreTimeout(t, err, seen, "release", started, testStoreTimeout)
}
