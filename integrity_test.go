package idem

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// A record whose amount or address changed in the keystore after Begin is
// never sent: it no longer matches its fingerprint.
func TestADamagedRecordIsNeverSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		damage func(r *keystore.Record)
	}{
		{"amount", func(r *keystore.Record) { r.Body = bytes.Replace(r.Body, []byte("777"), []byte("977"), 1) }},
		{"port", func(r *keystore.Record) { r.URL = strings.Replace(r.URL, "127.0.0.1:", "127.0.0.1:1", 1) }},
		{"method", func(r *keystore.Record) { r.Method = "PUT" }},
	} {
		for _, shared := range []bool{false, true} {
			// The memory store itself hands Do the record it holds
			// (keystore.Sharer); the wrapper hides that.
			t.Run(fmt.Sprintf("%s/shared=%t", tc.name, shared), func(t *testing.T) {
				t.Parallel()
				srv := idemtest.NewServer(t)
				store := keystore.NewMemory()
				var s keystore.Store = nopCloseStore{store}
				if shared {
					s = store
				}
				c := newTestClient(t, WithStore(s))
				in := begin(t, c, "", paymentRequest(t, srv.URL, 777, "damaged"))
				rec, err := store.Get(context.Background(), in.Key)
				require.NoError(t, err)
				tc.damage(rec)
				require.NoError(t, store.Update(context.Background(), rec))

				_, err = c.Do(context.Background(), in)
				require.ErrorIs(t, err, keystore.ErrCorrupt)
				assert.Zero(t, srv.Requests(), "nothing damaged is sent")
				assert.Equal(t, Pending, in.State)
			})
		}
	}
}

// Do settles the record Begin handed to the memory store in a copy: the
// store's record stays as Begin built it (and fingerprinted it), and the
// settled intent is stored as a new record.
func TestDoLeavesTheSharedRecordAsBegunAndStoresTheSettledOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	store := keystore.NewMemory()
	c := newTestClient(t, WithStore(store))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 778, "shared"))
	require.NotNil(t, in.begun, "Begin created and adopted the record")
	begun := in.begun.rec
	shared, err := store.GetShared(ctx, in.Key)
	require.NoError(t, err)
	require.Same(t, begun, shared)

	_, err = c.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, Pending, begun.State, "the shared record is never modified")
	assert.Zero(t, begun.Attempts)
	assert.Nil(t, begun.Response)
	stored, err := store.GetShared(ctx, in.Key)
	require.NoError(t, err)
	assert.NotSame(t, begun, stored)
	assert.Equal(t, Succeeded, stored.State)
	assert.Equal(t, 1, stored.Attempts)
	require.NotNil(t, stored.Response)
	assert.Equal(t, 1, srv.PaymentCount())

	// A replay reads the settled record, shared or not.
	resp, err := c.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, "true", resp.Header.Get(LocalReplayHeader))
	assert.Equal(t, 1, srv.PaymentCount())
}

// A key written into the body (Square's dialect) is not damage.
func TestAKeyInTheBodyIsNotDamage(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("square"))
	c := newTestClient(t, WithDialect(dialect.Square()))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 777, "body-key"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestWithoutBodyKeyUndoesWithBodyKey(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"amount":1}`, `{}`, ` { "a" : [1,2] }`} {
		with, err := withBodyKey([]byte(body), "idempotency_key", `k"1\`)
		require.NoError(t, err)
		assert.Equal(t, body, string(withoutBodyKey(with, "idempotency_key", `k"1\`)))
	}
	assert.Equal(t, `{"x":1}`, string(withoutBodyKey([]byte(`{"x":1}`), "idempotency_key", "k")))
}
