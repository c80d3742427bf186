package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type storeContextKey struct{}

// A store that waits on Done is woken at the deadline, as with
// context.WithTimeout.
func TestStoreContextDoneAtTheDeadline(t *testing.T) {
	t.Parallel()
	parent := context.WithValue(t.Context(), storeContextKey{}, "v")
	before := time.Now()
	ctx := newStoreContext(parent, 20*time.Millisecond)
	after := time.Now()
	defer ctx.stop()
	assert.Equal(t, "v", ctx.Value(storeContextKey{}))
	deadline, ok := ctx.Deadline()
	require.True(t, ok)
	// The timeout from when the context was made: bracketed by the
	// instants around it, whatever the machine's speed.
	assert.False(t, deadline.Before(before.Add(20*time.Millisecond)), "deadline %s after the context was made", deadline.Sub(before))
	assert.False(t, deadline.After(after.Add(20*time.Millisecond)), "deadline %s after the context was made", deadline.Sub(after))
	require.NoError(t, ctx.Err())
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done never closed")
	}
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	assert.Equal(t, "v", ctx.Value(storeContextKey{}))

	// A context derived from it ends with it.
	child, cancel := context.WithCancel(ctx)
	defer cancel()
	require.ErrorIs(t, child.Err(), context.DeadlineExceeded)
}

// A store that only checks Err sees the deadline pass without a timer,
// the parent's cancellation, and stop.
func TestStoreContextErrWithoutDone(t *testing.T) {
	t.Parallel()
	ctx := newStoreContext(t.Context(), time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	<-ctx.Done() // already past: closes at once
	ctx.stop()

	parent, cancel := context.WithCancel(t.Context())
	ctx = newStoreContext(parent, time.Hour)
	require.NoError(t, ctx.Err())
	cancel()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	<-ctx.Done()
	ctx.stop()

	ctx = newStoreContext(t.Context(), time.Hour)
	ctx.stop()
	require.ErrorIs(t, ctx.Err(), context.Canceled)
	<-ctx.Done()
	require.ErrorIs(t, ctx.Err(), context.Canceled)

	// stop after Done stops the timer and cancels.
	ctx = newStoreContext(t.Context(), time.Hour)
	done := ctx.Done()
	ctx.stop()
	<-done
	require.ErrorIs(t, ctx.Err(), context.Canceled)
}

// An earlier deadline of the parent is the context's deadline.
func TestStoreContextKeepsAnEarlierParentDeadline(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ctx := newStoreContext(parent, time.Hour)
	defer ctx.stop()
	want, _ := parent.Deadline()
	got, ok := ctx.Deadline()
	require.True(t, ok)
	assert.Equal(t, want, got)
}
