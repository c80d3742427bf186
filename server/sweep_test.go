package server_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// sweepCounter counts the Sweep calls a store receives and what they
// deleted; with fail set every Sweep fails.
type sweepCounter struct {
	server.Store
	fail    bool
	calls   atomic.Int32
	deleted atomic.Int32
}

func (s *sweepCounter) Sweep(ctx context.Context, limit int) (int, error) {
	s.calls.Add(1)
	if s.fail {
		return 0, errors.New("store unreachable")
	}
	n, err := s.Store.Sweep(ctx, limit)
	s.deleted.Add(int32(n))
	return n, err
}

// expiredStore returns a memory store holding expired completed records
// and one live record.
func expiredStore(t *testing.T, expired int) *server.MemoryStore {
	t.Helper()
	s, clock := newClockedStore(t)
	ctx := t.Context()
	for i := range expired + 1 {
		res, _, err := s.Reserve(ctx, memScope, newBenchKey(i), fp("x"), time.Minute)
		require.NoError(t, err)
		retention := time.Minute
		if i == expired {
			retention = 48 * time.Hour
		}
		require.NoError(t, s.Complete(ctx, completion(*res, "{}", retention)))
	}
	clock.Advance(time.Hour)
	return s
}

// startSweeper runs RunSweeper until the test ends and returns a channel
// closed when it has returned.
func startSweeper(t *testing.T, ctx context.Context, store server.Store, interval time.Duration, batch int, logger *slog.Logger) <-chan struct{} {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		server.RunSweeper(ctx, store, interval, batch, logger)
	}()
	return done
}

func TestSweeperDeletesExpiredRecordsInBatches(t *testing.T) {
	t.Parallel()
	store := &sweepCounter{Store: expiredStore(t, 5)}
	ctx, cancel := context.WithCancel(t.Context())
	done := startSweeper(t, ctx, store, time.Hour, 2, nil)

	require.Eventually(t, func() bool { return store.deleted.Load() == 5 }, 5*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool { return store.calls.Load() == 3 }, 5*time.Second, 5*time.Millisecond,
		"batches of 2, 2 and 1 drain the backlog in one round")
	cancel()
	<-done

	_, rec, err := store.Reserve(t.Context(), memScope, newBenchKey(5), fp("x"), time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec, "the live record stays")
	assert.Equal(t, http.StatusCreated, rec.Response.Status)
}

func TestSweeperRunsEveryIntervalAndSurvivesErrors(t *testing.T) {
	t.Parallel()
	store := &sweepCounter{Store: server.NewMemoryStore(), fail: true}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(t.Context())
	done := startSweeper(t, ctx, store, time.Millisecond, 10, slog.New(slog.NewTextHandler(logs, nil)))

	require.Eventually(t, func() bool { return store.calls.Load() >= 3 }, 5*time.Second, time.Millisecond,
		"a failed sweep does not stop the sweeper")
	cancel()
	<-done
	assert.Contains(t, logs.String(), "idempotency sweep failed")
}

func TestSweeperDefaultsForNonPositiveSettings(t *testing.T) {
	t.Parallel()
	store := &sweepCounter{Store: expiredStore(t, 3)}
	ctx, cancel := context.WithCancel(t.Context())
	done := startSweeper(t, ctx, store, 0, 0, nil)
	require.Eventually(t, func() bool { return store.deleted.Load() == 3 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	<-done
	assert.EqualValues(t, 1, store.calls.Load(), "one default-sized batch drains 3 records")
}
