package idem

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

type writeCtxKey struct{}

// A store that never blocks (the memory keystore) is written to directly,
// still without the caller's cancellation: a write after the call's
// context ended is made, and sees the context's values.
func TestWriteToANonBlockingStoreOutlivesTheCallersContext(t *testing.T) {
	t.Parallel()
	c := newTestClient(t) // the memory keystore
	nb, ok := c.store.(keystore.NonBlocking)
	require.True(t, ok && nb.WritesNeverBlock(), "the memory keystore says its writes never block")

	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), writeCtxKey{}, "v"))
	cancel()
	var seen context.Context
	err := c.write(ctx, func(wctx context.Context, _ *keystore.Record) error {
		seen = wctx
		return nil
	}, nil)
	require.NoError(t, err)
	require.NotNil(t, seen)
	assert.NoError(t, seen.Err(), "the write is not cut by the caller's cancellation")
	assert.Equal(t, "v", seen.Value(writeCtxKey{}))

	stored := errors.New("refused")
	err = c.write(ctx, func(context.Context, *keystore.Record) error { return stored }, nil)
	var werr *storeWriteError
	require.ErrorAs(t, err, &werr)
	assert.ErrorIs(t, err, stored)
}

// blockingMemory wraps the memory keystore and says its writes may block,
// as a wrapper that adds I/O must.
type blockingMemory struct{ *keystore.Memory }

func (blockingMemory) WritesNeverBlock() bool { return false }

// A store that may block keeps the bound: a write that never returns is
// given up on once the store timeout has passed (the caller's context
// live, without a deadline) or the grace (the context ended), whatever
// the store wraps.
func TestWriteToABlockingStoreIsBoundedByTheGrace(t *testing.T) {
	t.Parallel()
	for name, store := range map[string]keystore.Store{
		"declares it may block": blockingMemory{keystore.NewMemory()},
		"declares nothing":      nopCloseStore{keystore.NewMemory()},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, WithStore(store), WithWriteGrace(50*time.Millisecond), WithStoreTimeout(50*time.Millisecond))
			release := make(chan struct{})
			t.Cleanup(func() { close(release) })
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			for _, ctx := range []context.Context{context.Background(), ended} {
				done := make(chan error, 1)
				go func() {
					done <- c.write(ctx, func(context.Context, *keystore.Record) error {
						<-release
						return nil
					}, nil)
				}()
				select {
				case err := <-done:
					var werr *storeWriteError
					require.ErrorAs(t, err, &werr)
					assert.ErrorIs(t, err, ErrStoreTimeout)
					assert.ErrorIs(t, err, context.DeadlineExceeded)
				case <-time.After(10 * time.Second):
					t.Fatal("a stalled write held the caller past its bound")
				}
			}
		})
	}
}
