package server_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

var onceScope = server.Scope{Principal: "billing", Method: "CONSUME", Route: "orders.paid"}

func TestOnceRunsOnceAndReplaysTheResult(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	runs := 0
	fn := func(context.Context) ([]byte, error) { runs++; return []byte("done"), nil }
	for range 3 {
		got, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", fn)
		require.NoError(t, err)
		assert.Equal(t, "done", string(got))
	}
	assert.Equal(t, 1, runs)
}

func TestOnceReleasesTheIDWhenFnFails(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	boom := errors.New("boom")
	_, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	got, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { return []byte("ok"), nil })
	require.NoError(t, err, "a redelivery runs again")
	assert.Equal(t, "ok", string(got))
}

func TestOnceReleasesTheIDWhenFnPanics(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	assert.Panics(t, func() {
		_, _ = server.Once(t.Context(), store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { panic("x") })
	})
	_, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { return nil, nil })
	require.NoError(t, err)
}

func TestOnceRefusesWhileHeldAndForAnotherPayload(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	_, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(ctx context.Context) ([]byte, error) {
		_, err := server.Once(ctx, store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { return nil, nil })
		assert.ErrorIs(t, err, server.ErrInProgress, "a second consumer while the first runs")
		return []byte("first"), nil
	})
	require.NoError(t, err)
	_, err = server.Once(t.Context(), store, onceScope, "m-1", "other", func(context.Context) ([]byte, error) { return nil, nil })
	assert.ErrorIs(t, err, server.ErrKeyReused)
}

func TestOnceStaleConsumerIsFenced(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	store := server.NewMemoryStore(server.WithClock(clock.Now))
	t.Cleanup(func() { _ = store.Close() })
	_, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(ctx context.Context) ([]byte, error) {
		clock.Advance(2 * time.Second) // the lease ends while fn runs
		got, err := server.Once(ctx, store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { return []byte("newer"), nil }, server.WithLease(time.Second))
		require.NoError(t, err, "a redelivery takes the id over")
		assert.Equal(t, "newer", string(got))
		return []byte("stale"), nil
	}, server.WithLease(time.Second))
	require.ErrorIs(t, err, server.ErrFenced)
	got, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(context.Context) ([]byte, error) { return nil, errors.New("must not run") })
	require.NoError(t, err)
	assert.Equal(t, "newer", string(got), "the newer consumer's result stands")
}

func TestOnceCommitsAnEffectWithTheCompletion(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	var ledger []string
	for range 2 {
		_, err := server.Once(t.Context(), store, onceScope, "m-1", "fp", func(ctx context.Context) ([]byte, error) {
			held, ok := server.HeldFrom(ctx)
			require.True(t, ok)
			result := []byte("charged")
			err := store.CompleteFunc(ctx, *held.Completion(server.Response{Status: 200, Body: result}), func() error {
				ledger = append(ledger, "charge")
				return nil
			})
			if err != nil {
				return nil, err
			}
			held.MarkCompleted()
			return result, nil
		})
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"charge"}, ledger)
}
