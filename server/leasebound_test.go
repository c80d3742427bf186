package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

func TestNewRefusesALeaseTheStoreTimeoutDoesNotAllowFor(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	secret := server.WithPrincipal(server.BearerPrincipal([]byte("0123456789abcdef0123456789abcdef")))

	_, err := server.New(store, secret, server.WithLease(2*time.Second)) // default store timeout 3 s
	var short *server.LeaseTooShortError
	require.ErrorAs(t, err, &short)
	require.ErrorIs(t, err, server.ErrLeaseTooShort)
	assert.Equal(t, 2*time.Second, short.Lease)
	assert.Equal(t, server.DefaultStoreTimeout, short.StoreTimeout)
	assert.Equal(t, 9*time.Second, short.MinLease())
	for _, want := range []string{"lease 2s", "store timeout 3s", "at least 9s", "at most 666ms"} {
		assert.Contains(t, err.Error(), want)
	}

	_, err = server.New(store, secret, server.WithStoreTimeout(time.Minute)) // default lease 30 s
	require.ErrorIs(t, err, server.ErrLeaseTooShort, "a longer store timeout needs a longer lease too")

	_, err = server.New(store, secret, server.WithLease(2*time.Second), server.WithStoreTimeout(600*time.Millisecond))
	require.NoError(t, err, "a lease of 3 × the store timeout is enough")
	require.NoError(t, server.CheckLease(server.DefaultLease, server.DefaultStoreTimeout), "the defaults agree")
	require.False(t, errors.Is(server.CheckLease(time.Second, 100*time.Millisecond), server.ErrLeaseTooShort))
}
