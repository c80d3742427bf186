package testserver_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

func stripeCase(t *testing.T) dialectCase {
	t.Helper()
	for _, c := range dialectCases {
		if c.name == "stripe" {
			return c
		}
	}
	t.Fatal("no stripe dialect case")
	return dialectCase{}
}

// stripeErrorOf checks a Stripe error document: application/json,
// {"error":{"type","message",...}} with status, and returns the error.
func stripeErrorOf(t *testing.T, a answer, status int, typ string) map[string]any {
	t.Helper()
	e := a.jsonAt(t, status, "error")
	assert.Equal(t, typ, e["type"], a.body)
	assert.NotEmpty(t, e["message"], a.body)
	return e
}

// Stripe answers carry the key back in Idempotency-Key, first answers,
// replays and refusals alike, and only replays carry Idempotent-Replayed.
func TestStripeDialect_EchoesKeyAndMarksOnlyReplays(t *testing.T) {
	t.Parallel()
	s := startDialect(t, stripeCase(t))
	const key = "order-7"
	first := s.pay(t, key, 1000)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	assert.Equal(t, key, first.header.Get("Idempotency-Key"))
	assert.Empty(t, first.header.Get("Idempotent-Replayed"), "a first answer is not a replay")

	replay := s.pay(t, key, 1000)
	assert.Equal(t, key, replay.header.Get("Idempotency-Key"))
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))

	reused := s.pay(t, key, 1001)
	stripeErrorOf(t, reused, http.StatusBadRequest, "idempotency_error")
	assert.Equal(t, key, reused.header.Get("Idempotency-Key"))
	assert.Empty(t, reused.header.Get("Idempotent-Replayed"))
}

// The rule of dialect.Stripe for a replayed 5xx needs the simulator to
// mark it: a saved 500 comes back Idempotent-Replayed: true, as
// api_error.
func TestStripeDialect_Replayed500IsMarked(t *testing.T) {
	t.Parallel()
	clock := &badYearClock{}
	s := startDialect(t, stripeCase(t), testserver.WithServerClock(clock.now))
	failed := s.pay(t, "k500", 1000)
	stripeErrorOf(t, failed, http.StatusInternalServerError, "api_error")
	assert.Empty(t, failed.header.Get("Idempotent-Replayed"))

	clock.fixed.Store(true)
	retry := s.pay(t, "k500", 1000)
	stripeErrorOf(t, retry, http.StatusInternalServerError, "api_error")
	assert.Equal(t, "true", retry.header.Get("Idempotent-Replayed"))
	assert.Equal(t, failed.body, retry.body)
	assert.Zero(t, s.payments(t))
}

// Every error of the simulated API is a Stripe error document, not a
// problem: bad parameters, unknown paths, wrong methods, injected faults,
// the store down.
func TestStripeDialect_ErrorsAreStripeShaped(t *testing.T) {
	t.Parallel()
	s := startDialect(t, stripeCase(t))
	do := func(method, path, body string) answer {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, s.url+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "shape-"+method+path)
		return send(t, req)
	}
	stripeErrorOf(t, do(http.MethodPost, "/v1/payments", `{"amount":-1,"currency":"EUR"}`), http.StatusBadRequest, "invalid_request_error")
	missing := stripeErrorOf(t, do(http.MethodGet, "/v1/payments/pay_nope", ""), http.StatusNotFound, "invalid_request_error")
	assert.Equal(t, "resource_missing", missing["code"])
	stripeErrorOf(t, do(http.MethodGet, "/v1/nowhere", ""), http.StatusNotFound, "invalid_request_error")
	wrong := do(http.MethodDelete, "/v1/payments", "")
	stripeErrorOf(t, wrong, http.StatusMethodNotAllowed, "invalid_request_error")
	assert.NotEmpty(t, wrong.header.Get("Allow"))

	s.Faults().FailNext(1, http.StatusServiceUnavailable, time.Second)
	stripeErrorOf(t, s.pay(t, "fault", 1000), http.StatusServiceUnavailable, "api_error")
	assert.Zero(t, s.payments(t))
}

func send(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: b.String()}
}
