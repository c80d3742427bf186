package server

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type otherKey struct{}

// The request context execute builds answers HeldFrom, and everything
// else (values, cancellation, causes) from its parent; its body and
// GetBody read the layer's bytes.
func TestHeldRequestCarriesTheKeyAndItsParent(t *testing.T) {
	t.Parallel()
	parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), otherKey{}, "v"))
	hr := newHeldRequest(parent, Reservation{Key: "k", Token: "t"}, time.Hour, time.Second, []byte("body"), nil)
	ctx := context.Context(&hr.ctx)

	held, ok := HeldFrom(ctx)
	require.True(t, ok)
	assert.Same(t, &hr.held, held)
	assert.Equal(t, "k", held.Reservation.Key)
	assert.Equal(t, time.Hour, held.Retention)
	assert.Equal(t, "v", ctx.Value(otherKey{}))

	child, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	cause := io.ErrUnexpectedEOF
	cancel(cause)
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("cancelling the parent did not reach a child of the held context")
	}
	assert.ErrorIs(t, context.Cause(child), cause)

	b, err := io.ReadAll(&hr.body)
	require.NoError(t, err)
	assert.Equal(t, "body", string(b))
	again, err := hr.getBody()
	require.NoError(t, err)
	b, err = io.ReadAll(again)
	require.NoError(t, err)
	assert.Equal(t, "body", string(b))
}
