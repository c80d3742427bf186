package idem

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Reconciler whose Response has no Body (a status and headers built by
// hand) settles the intent with an empty body instead of panicking.
func TestReconcilerResponseWithoutABody(t *testing.T) {
	t.Parallel()
	origin, f := expiredCredentialsFront(t)
	c := newTestClient(t, WithMaxAttempts(2), WithReconciler(func(context.Context, *Intent) (Reconciliation, error) {
		return Reconciliation{
			Outcome:  OutcomeSucceeded,
			Evidence: "pay_1 found by reference",
			Response: &http.Response{StatusCode: http.StatusOK, Header: http.Header{"X-Payment": {"pay_1"}}},
		}, nil
	}))
	in := begin(t, c, "order-nobody/payment", paymentRequest(t, f.URL, 700, "nobody"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "pay_1", resp.Header.Get("X-Payment"))
	assert.Empty(t, readBody(t, resp))
	assert.Equal(t, 1, origin.PaymentCount())

	again, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.True(t, IsLocalReplay(again))
	assert.Empty(t, readBody(t, again))
}
