package idem

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

func TestDeriveKeyIsStableAndApart(t *testing.T) {
	t.Parallel()
	a := DeriveKey("payment", "order-42")
	assert.Equal(t, a, DeriveKey("payment", "order-42"))
	assert.NotEqual(t, a, DeriveKey("refund", "order-42"))
	assert.NotEqual(t, a, DeriveKey("payment", "order-43"))
	assert.NotEqual(t, DeriveKey("a", "b\x00c"), DeriveKey("a\x00b", "c"), "no ambiguity between namespace and id")
	u, err := uuid.Parse(a)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(5), u.Version())
}

func TestWithIntentKey(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	ctx := context.Background()
	key := DeriveKey("payment", "order-7")

	in, err := c.Begin(ctx, "order-7/payment", paymentRequest(t, srv.URL, 700, "order-7"), WithIntentKey(key))
	require.NoError(t, err)
	assert.Equal(t, key, in.Key)

	same, err := c.Begin(ctx, "", paymentRequest(t, srv.URL, 700, "order-7"), WithIntentKey(key))
	require.NoError(t, err, "the key names this intent")
	assert.Equal(t, in.Key, same.Key)

	_, err = c.Begin(ctx, "", paymentRequest(t, srv.URL, 701, "order-7"), WithIntentKey(key))
	assert.ErrorIs(t, err, ErrIntentConflict, "the key is another payload's")
	_, err = c.Begin(ctx, "order-7/payment", paymentRequest(t, srv.URL, 700, "order-7"), WithIntentKey(DeriveKey("payment", "other")))
	assert.ErrorIs(t, err, ErrIntentConflict, "the name is bound to another key")
	_, err = c.Begin(ctx, "", paymentRequest(t, srv.URL, 700, "x"), WithIntentKey("has space"))
	assert.ErrorIs(t, err, ErrInvalidRequest)

	resp, err := c.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, key, resp.Request.Header.Get("Idempotency-Key"))
	assert.Equal(t, 1, srv.PaymentCount())
}

// With keys derived from the business identifier, losing the keystore
// file loses no dedup: the intent begun again has its old key, and the
// server replays what it did.
func TestDerivedKeysSurviveALostKeystore(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intents.db")
	key := DeriveKey("payment", "order-99")

	c, err := New(append(fastOptions(), WithBoltStore(path, nil))...)
	require.NoError(t, err)
	in, err := c.Begin(ctx, "order-99/payment", paymentRequest(t, srv.URL, 9900, "order-99"), WithIntentKey(key))
	require.NoError(t, err)
	_, err = c.Do(ctx, in)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, os.Remove(path), "the keystore is lost")

	c2 := newTestClient(t, WithBoltStore(path, nil))
	again, err := c2.Begin(ctx, "order-99/payment", paymentRequest(t, srv.URL, 9900, "order-99"), WithIntentKey(key))
	require.NoError(t, err)
	resp, err := c2.Do(ctx, again)
	require.NoError(t, err)
	assert.True(t, IsReplay(resp), "the server replays the payment")
	assert.Equal(t, 1, srv.PaymentCount())
}
