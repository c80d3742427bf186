package idem

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// A Client that New did not build (a zero value, a nil pointer) refuses
// every call with ErrClientNotOpen instead of panicking, and sends nothing.
func TestAClientNotBuiltByNewSaysUseNew(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	ctx := context.Background()
	var zero Client
	var nilClient *Client
	for name, c := range map[string]*Client{"zero value": &zero, "nil pointer": nilClient} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Begin(ctx, "order-1/payment", paymentRequest(t, srv.URL, 100, "zero"))
			require.ErrorIs(t, err, ErrClientNotOpen)
			assert.Contains(t, err.Error(), "idem.New")

			_, err = c.Do(ctx, &Intent{Key: "k"})
			require.ErrorIs(t, err, ErrClientNotOpen)
			_, err = c.Resume(ctx, "k")
			require.ErrorIs(t, err, ErrClientNotOpen)
			_, err = c.Pending(ctx)
			require.ErrorIs(t, err, ErrClientNotOpen)
			_, err = c.Reconcile(ctx, &Intent{Key: "k"})
			require.ErrorIs(t, err, ErrClientNotOpen)
			_, err = c.Settle(ctx, "k", Settlement{Outcome: OutcomeFailed, By: "ops", Note: "n"})
			require.ErrorIs(t, err, ErrClientNotOpen)
			_, err = c.ClaimPending(ctx, 1)
			require.ErrorIs(t, err, ErrClientNotOpen)

			api := &http.Client{Transport: c.Transport()}
			_, err = api.Do(paymentRequest(t, srv.URL, 100, "zero-transport"))
			require.ErrorIs(t, err, ErrClientNotOpen)

			require.NoError(t, c.Close(), "closing what holds nothing is not an error")
			assert.Equal(t, 0, srv.PaymentCount(), "nothing was sent")
		})
	}
}

// Keystore hands packages built on the client (saga) the very store the
// client keeps its intents in; a Client New did not build has none.
func TestKeystoreIsTheClientsStore(t *testing.T) {
	t.Parallel()
	store := keystore.NewMemory()
	c, err := New(WithStore(store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	assert.Same(t, store, c.Keystore())
	var none *Client
	assert.Nil(t, none.Keystore())
	assert.Nil(t, (&Client{}).Keystore())
}
