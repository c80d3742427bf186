package stripeclient_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v85"
)

// paymentID reads the id of the payment an answer carries.
func paymentID(t *testing.T, resp *stripe.APIResponse) string {
	t.Helper()
	var p struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(resp.RawJSON, &p), string(resp.RawJSON))
	require.NotEmpty(t, p.ID, string(resp.RawJSON))
	return p.ID
}

// A lost answer: the payment is made and the connection closes without
// an answer. stripe-go retries by itself with the key it made, the
// simulator replays the payment (Idempotent-Replayed: true, the key
// echoed), and stripe-go returns success. One payment.
func TestStripeGo_LostAnswerIsRetriedAndReplayed(t *testing.T) {
	t.Parallel()
	srv, b, log := stripeAgainst(t)
	srv.LoseNextResponses(1)

	resp, err := pay(t, b, "", 1500)
	require.NoError(t, err, "stripe-go retries a lost answer and gets the replay")
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))
	assert.NotEmpty(t, resp.IdempotencyKey, "the simulator echoes the key stripe-go made")
	assert.Equal(t, 1, log.count(), "stripe-go's own retry")
	assert.Equal(t, 2, srv.Requests())

	payments := srv.Payments(apiKey)
	require.Len(t, payments, 1)
	assert.Equal(t, payments[0].ID, paymentID(t, resp))
	assert.Equal(t, 1, srv.PaymentCount())
}

// A 5xx with Stripe's error document: stripe-go reports it as an
// api_error and does not retry (its shouldRetry asks the parsed
// *stripe.Error, whose canRetry is true for a 429 lock_timeout only).
// Nothing ran; the application's retry with the same key pays once.
func TestStripeGo_ServerErrorIsReportedNotRetried(t *testing.T) {
	t.Parallel()
	srv, b, log := stripeAgainst(t)
	const key = "order-7-5xx"
	srv.FailNext(1, http.StatusInternalServerError, 0)

	_, err := pay(t, b, key, 1500)
	serr := stripeErrorOf(t, err)
	assert.Equal(t, http.StatusInternalServerError, serr.HTTPStatusCode)
	assert.Equal(t, stripe.ErrorTypeAPI, serr.Type)
	var apiErr *stripe.APIError
	assert.ErrorAs(t, err, &apiErr)
	assert.Zero(t, log.count(), "stripe-go does not retry a parsed 5xx")
	assert.Equal(t, 1, srv.Requests())
	assert.Zero(t, srv.PaymentCount())

	resp, err := pay(t, b, key, 1500)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Empty(t, resp.Header.Get("Idempotent-Replayed"), "the failed attempt stored nothing")
	assert.Equal(t, key, resp.IdempotencyKey)
	require.Len(t, srv.Payments(apiKey), 1)
}

// The same key on another body: stripe-go reports Stripe's
// idempotency_error (a 400, *stripe.IdempotencyError), does not retry,
// and no second payment is made.
func TestStripeGo_KeyReuseWithAnotherBodyIsIdempotencyError(t *testing.T) {
	t.Parallel()
	srv, b, log := stripeAgainst(t)
	const key = "order-7-reuse"

	first, err := pay(t, b, key, 1500)
	require.NoError(t, err)
	_, err = pay(t, b, key, 2500)
	serr := stripeErrorOf(t, err)
	assert.Equal(t, http.StatusBadRequest, serr.HTTPStatusCode)
	assert.Equal(t, stripe.ErrorTypeIdempotency, serr.Type)
	var idemErr *stripe.IdempotencyError
	assert.ErrorAs(t, err, &idemErr)
	assert.Zero(t, log.count())
	assert.Equal(t, 2, srv.Requests())

	payments := srv.Payments(apiKey)
	require.Len(t, payments, 1)
	assert.Equal(t, paymentID(t, first), payments[0].ID)
	assert.Equal(t, int64(1500), payments[0].Amount)
}

// inProgressDelay holds the first request after its key is reserved, long
// enough for the duplicate to arrive while it runs. Only the order of
// events is asserted, never a duration.
const inProgressDelay = 3 * time.Second

// A duplicate while the first request still runs: the simulator answers
// Stripe's 409 invalid_request_error idempotency_key_in_use, which
// stripe-go reports (*stripe.InvalidRequestError) and does not retry,
// though a 409 without an error document would be. The first request
// pays; the application's later retry with the key gets its replay. One
// payment.
func TestStripeGo_InProgressDuplicateIsKeyInUse(t *testing.T) {
	t.Parallel()
	srv, b, log := stripeAgainst(t)
	const key = "order-7-busy"
	srv.SetHandlerDelay(inProgressDelay)

	type result struct {
		resp *stripe.APIResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := b.RawRequest("POST", "/v1/payments", apiKey, "amount=1500&currency=EUR&reference=order-7",
			&stripe.RawParams{Params: stripe.Params{IdempotencyKey: stripe.String(key)}})
		done <- result{resp, err}
	}()
	require.Eventually(t, func() bool { return srv.Holding() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the first request holds its key")

	_, err := pay(t, b, key, 1500)
	serr := stripeErrorOf(t, err)
	assert.Equal(t, http.StatusConflict, serr.HTTPStatusCode)
	assert.Equal(t, stripe.ErrorTypeInvalidRequest, serr.Type)
	assert.Equal(t, stripe.ErrorCodeIdempotencyKeyInUse, serr.Code)
	var invalid *stripe.InvalidRequestError
	assert.ErrorAs(t, err, &invalid)
	assert.Zero(t, log.count(), "stripe-go does not retry a parsed 409")
	assert.Equal(t, 2, srv.Requests())

	var first result
	select {
	case first = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the first request did not finish")
	}
	require.NoError(t, first.err)
	assert.Equal(t, http.StatusCreated, first.resp.StatusCode)

	srv.SetHandlerDelay(0)
	replay, err := pay(t, b, key, 1500)
	require.NoError(t, err)
	assert.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	assert.Equal(t, paymentID(t, first.resp), paymentID(t, replay))
	require.Len(t, srv.Payments(apiKey), 1)
}
