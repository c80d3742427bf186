package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// fillStore reserves and completes n keys of memScope, each kept for
// retention.
func fillStore(t *testing.T, s *server.MemoryStore, n int, retention time.Duration) {
	t.Helper()
	for i := range n {
		res, _, err := s.Reserve(t.Context(), memScope, newBenchKey(i), fp("x"), time.Minute)
		require.NoError(t, err)
		require.NotNil(t, res, "key %d", i)
		require.NoError(t, s.Complete(t.Context(), completion(*res, "{}", retention)))
	}
}

// fillStoreAcross reserves and completes n keys, each of a principal of
// its own, kept for retention: a store a single principal could not fill
// past its fair share.
func fillStoreAcross(t *testing.T, s *server.MemoryStore, n int, retention time.Duration) {
	t.Helper()
	for i := range n {
		scope := memScope
		scope.Principal = fmt.Sprintf("tenant-%d", i)
		res, _, err := s.Reserve(t.Context(), scope, newBenchKey(i), fp("x"), time.Minute)
		require.NoError(t, err)
		require.NotNil(t, res, "key %d", i)
		require.NoError(t, s.Complete(t.Context(), completion(*res, "{}", retention)))
	}
}

func TestMemoryStoreFullRefusesNewKeysAndKeepsAnsweringOldOnes(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	s := server.NewMemoryStore(server.WithClock(clock.Now), server.WithCapacity(4, 0))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	fillStore(t, s, 2, time.Hour)
	inFlight, _, err := s.Reserve(ctx, memScope, "in-flight", fp("x"), time.Hour)
	require.NoError(t, err)
	require.NotNil(t, inFlight)
	stale, _, err := s.Reserve(ctx, memScope, "stale", fp("x"), time.Minute)
	require.NoError(t, err)
	require.NotNil(t, stale)
	records, _ := s.Usage()
	assert.Equal(t, 4, records)

	_, _, err = s.Reserve(ctx, memScope, "new", fp("x"), time.Minute)
	require.ErrorIs(t, err, server.ErrStoreFull, "a full store refuses a new key")

	for i := range 2 {
		res, rec, err := s.Reserve(ctx, memScope, newBenchKey(i), fp("x"), time.Minute)
		require.NoError(t, err, "a retry of a held key is answered, full or not")
		assert.Nil(t, res)
		require.NotNil(t, rec)
		assert.Equal(t, server.StateCompleted, rec.State)
	}
	require.NoError(t, s.Complete(ctx, completion(*inFlight, "{}", time.Hour)),
		"a reservation in flight completes in a full store")

	clock.Advance(2 * time.Minute)
	takeover, _, err := s.Reserve(ctx, memScope, "stale", fp("x"), time.Minute)
	require.NoError(t, err, "a lease that ran out is taken over in place, without a new record")
	require.NotNil(t, takeover)

	clock.Advance(2 * time.Hour)
	_, _, err = s.Reserve(ctx, memScope, "new", fp("x"), time.Minute)
	if err != nil { // the due records are in other parts than the new key's
		require.ErrorIs(t, err, server.ErrStoreFull)
		_, err = s.Sweep(ctx, 10)
		require.NoError(t, err)
		_, _, err = s.Reserve(ctx, memScope, "new", fp("x"), time.Minute)
	}
	require.NoError(t, err, "records past their retention make room")
}

func TestMemoryStoreByteBoundRefusesNewKeys(t *testing.T) {
	t.Parallel()
	s := server.NewMemoryStore(server.WithCapacity(0, 4096))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	res, _, err := s.Reserve(ctx, memScope, "big", fp("x"), time.Minute)
	require.NoError(t, err)
	big := completion(*res, string(make([]byte, 8192)), time.Hour)
	require.NoError(t, s.Complete(ctx, big), "a completion is stored even past the byte bound")
	_, bytes := s.Usage()
	assert.Greater(t, bytes, int64(8192))

	_, _, err = s.Reserve(ctx, memScope, "next", fp("x"), time.Minute)
	require.ErrorIs(t, err, server.ErrStoreFull)
	_, rec, err := s.Reserve(ctx, memScope, "big", fp("x"), time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Len(t, rec.Response.Body, 8192, "the held answer is replayed whole")
}

// A full store whose due records sit in other parts than the new key's
// asks its sweeper to run at once: the refused request's retry finds room
// without waiting for the sweep interval.
func TestMemoryStoreFullWakesTheSweeper(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	const capacity = 64
	s := server.NewMemoryStore(server.WithClock(clock.Now), server.WithCapacity(capacity, 0))
	t.Cleanup(func() { _ = s.Close() })
	fillStoreAcross(t, s, capacity, time.Minute)
	clock.Advance(time.Hour)

	ctx, cancel := context.WithCancel(t.Context())
	done := startSweeper(t, ctx, s, time.Hour, 10, nil)
	require.Eventually(t, func() bool { n, _ := s.Usage(); return n == 0 }, 5*time.Second, time.Millisecond,
		"the sweep at start")
	fillStoreAcross(t, s, capacity, time.Minute)
	clock.Advance(time.Hour)
	// A new key that lands in a part holding due records reclaims them and
	// is admitted; the first that lands in a part without any is refused.
	refused, admitted := 0, 0
	for i := range capacity {
		_, _, err := s.Reserve(ctx, memScope, newBenchKey(capacity+i), fp("x"), time.Minute)
		if err != nil {
			require.ErrorIs(t, err, server.ErrStoreFull)
			refused++
			break
		}
		admitted++
	}
	require.Positive(t, refused, "some new key lands in a part without a due record")
	assert.Eventually(t, func() bool { n, _ := s.Usage(); return n == admitted }, 5*time.Second, time.Millisecond,
		"the refusal woke the sweeper, whose interval is an hour: only the %d admitted reservations are left", admitted)
	cancel()
	<-done
}

func TestMiddlewareAnswersFullStore503AndReplaysHeldKeys(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore(server.WithCapacity(1, 0))
	t.Cleanup(func() { _ = store.Close() })
	h := &countingHandler{}
	guarded := mustNew(t, store).Wrap(paymentsRoute, h)

	first := serve(guarded, post("k1", `{"a":1}`))
	require.Equal(t, http.StatusCreated, first.Code)

	refused := serve(guarded, post("k2", `{"a":1}`))
	assert.Equal(t, http.StatusServiceUnavailable, refused.Code)
	assert.Equal(t, server.ProblemStoreUnavailable, problemType(t, refused))
	assert.NotEmpty(t, refused.Header().Get("Retry-After"))

	again := serve(guarded, post("k1", `{"a":1}`))
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.True(t, replayed(again), "the held key replays in a full store")
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.Equal(t, 1, h.runs(), "the refused request never ran")
}
