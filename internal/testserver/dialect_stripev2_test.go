package testserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

func stripeV2Case(t *testing.T) dialectCase {
	t.Helper()
	for _, c := range dialectCases {
		if c.name == "stripe-v2" {
			return c
		}
	}
	t.Fatal("no stripe-v2 dialect case")
	return dialectCase{}
}

// "If the first request failed (or partially failed), the API re-executes
// the failed requests and returns the new response"
// (https://docs.stripe.com/api-v2-overview#idempotency): a 500 from inside
// the idempotency layer is not saved, the retry with the key executes and
// pays once, and a later retry gets that payment back without paying again.
// Nothing is marked replayed and the key is not echoed (both v1 only).
func TestStripeV2Dialect_FailedRequestIsExecutedAgain(t *testing.T) {
	t.Parallel()
	clock := &badYearClock{}
	s := startDialect(t, stripeV2Case(t), testserver.WithServerClock(clock.now))
	failed := s.pay(t, "v2-500", 1000)
	stripeErrorOf(t, failed, http.StatusInternalServerError, "api_error")
	assert.Zero(t, s.payments(t))

	clock.fixed.Store(true)
	retry := s.pay(t, "v2-500", 1000)
	require.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, 1, s.payments(t))

	again := s.pay(t, "v2-500", 1000)
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, retry.body, again.body, "the finished request's answer, no new changes")
	assert.Equal(t, 1, s.payments(t))
	for _, a := range []answer{failed, retry, again} {
		assert.Empty(t, a.header.Get("Idempotent-Replayed"))
		assert.Empty(t, a.header.Get("Idempotency-Key"))
	}
}

// Two requests are one when they "occur within 30 days of each other"
// (https://docs.stripe.com/api-v2-overview#idempotency): a retry 29 days
// on gets the first payment; one 31 days on is a new request.
func TestStripeV2Dialect_KeysKept30Days(t *testing.T) {
	t.Parallel()
	clock := testserver.NewManualClock()
	s := startDialect(t, stripeV2Case(t), testserver.WithServerClock(clock.Now))
	first := s.pay(t, "v2-month", 1000)
	require.Equal(t, http.StatusCreated, first.status, first.body)

	clock.Advance(29 * 24 * time.Hour)
	within := s.pay(t, "v2-month", 1000)
	assert.Equal(t, first.body, within.body)
	assert.Equal(t, 1, s.payments(t))

	clock.Advance(2 * 24 * time.Hour)
	after := s.pay(t, "v2-month", 1000)
	require.Equal(t, http.StatusCreated, after.status, after.body)
	assert.NotEqual(t, first.body, after.body)
	assert.Equal(t, 2, s.payments(t))
}

// "Request and responses use JSON encoding (application/json)"
// (https://docs.stripe.com/api-v2-overview): the form bodies v1 takes are
// refused, in the v2 error document, before anything runs.
func TestStripeV2Dialect_JSONBodiesOnly(t *testing.T) {
	t.Parallel()
	s := startDialect(t, stripeV2Case(t))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+"/v1/payments",
		strings.NewReader("amount=1000&currency=EUR"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", "v2-form")
	a := send(t, req)
	assert.GreaterOrEqual(t, a.status, 400)
	assert.Less(t, a.status, 500)
	stripeErrorOf(t, a, a.status, "invalid_request_error")
	assert.Zero(t, s.payments(t))
}

// Every error of the simulated API is the v2 error document, never a
// problem: unknown resources, injected faults, the store down.
func TestStripeV2Dialect_ErrorsAreStripeShaped(t *testing.T) {
	t.Parallel()
	s := startDialect(t, stripeV2Case(t))
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, s.url+"/v1/payments/pay_nope", nil)
	require.NoError(t, err)
	missing := stripeErrorOf(t, send(t, req), http.StatusNotFound, "invalid_request_error")
	assert.Equal(t, "resource_missing", missing["code"])

	s.Faults().FailNext(1, http.StatusBadGateway, 0)
	stripeErrorOf(t, s.pay(t, "v2-fault", 1000), http.StatusBadGateway, "api_error")
	assert.Zero(t, s.payments(t))
	// The failure left nothing done: the retry runs.
	assert.Equal(t, http.StatusCreated, s.pay(t, "v2-fault", 1000).status)
	assert.Equal(t, 1, s.payments(t))
}
