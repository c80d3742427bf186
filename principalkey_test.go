package idem

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// The default principal key is the keystore's own: two new keystores
// fingerprint one credential apart, neither under the fixed key, and one
// keystore alike after a restart (its names resolve).
func TestPrincipalKeyIsPerKeystore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	dir := t.TempDir()
	beginIn := func(path string) *Intent {
		c, err := New(append(fastOptions(), WithBoltStore(path, nil))...)
		require.NoError(t, err)
		defer c.Close()
		return begin(t, c, "order-1/payment", paymentRequest(t, srv.URL, 100, "order-1"))
	}
	a := beginIn(filepath.Join(dir, "a.db"))
	b := beginIn(filepath.Join(dir, "b.db"))
	assert.NotEqual(t, a.Principal, b.Principal, "one credential, two keystores, two fingerprints")

	fixed := newTestClient(t, WithPrincipalKey(defaultPrincipalKey))
	underFixed := begin(t, fixed, "order-1/payment", paymentRequest(t, srv.URL, 100, "order-1"))
	assert.NotEqual(t, underFixed.Principal, a.Principal, "not the fixed key")

	again := beginIn(filepath.Join(dir, "a.db"))
	assert.Equal(t, a.Key, again.Key, "the keystore's key survives a restart")
	assert.Equal(t, a.Principal, again.Principal)

	// A client given a key of its own uses it, not the keystore's.
	given, err := New(append(fastOptions(), WithBoltStore(filepath.Join(dir, "a.db"), nil), WithPrincipalKey([]byte("0123456789abcdef-own")))...)
	require.NoError(t, err)
	defer given.Close()
	_, err = given.Begin(ctx, "order-1/payment", paymentRequest(t, srv.URL, 100, "order-1"))
	require.ErrorIs(t, err, ErrIdentityAmbiguous, "another key: another principal, refused rather than begun twice")
}

// A keystore that holds records and no key of its own (written by an
// earlier build, under the fixed key) keeps the fixed key: its names
// resolve as before. An empty one gets a key of its own.
func TestPrincipalKeyOfAnExistingKeystoreStaysFixed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	store := keystore.NewMemory()
	earlier, err := New(append(fastOptions(), WithStore(nopCloseStore{store}), WithPrincipalKey(defaultPrincipalKey))...)
	require.NoError(t, err)
	defer earlier.Close()
	old := begin(t, earlier, "order-2/payment", paymentRequest(t, srv.URL, 200, "order-2"))

	c := newTestClient(t, WithStore(store))
	again := begin(t, c, "order-2/payment", paymentRequest(t, srv.URL, 200, "order-2"))
	assert.Equal(t, old.Key, again.Key)
	key, err := store.PrincipalKey(ctx, make([]byte, 16), make([]byte, 16))
	require.NoError(t, err)
	assert.Equal(t, defaultPrincipalKey, key, "kept")

	empty := keystore.NewMemory()
	key, err = empty.PrincipalKey(ctx, []byte("fresh-key-of-16-bytes"), defaultPrincipalKey)
	require.NoError(t, err)
	assert.Equal(t, []byte("fresh-key-of-16-bytes"), key)
	_, err = empty.PrincipalKey(ctx, []byte("short"), defaultPrincipalKey)
	require.Error(t, err)
}
