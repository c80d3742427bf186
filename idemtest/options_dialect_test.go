package idemtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WithDialect("square") reads the key from the body, answers Square's
// error documents, and keeps the payments API as it is.
func TestWithDialect_Square(t *testing.T) {
	t.Parallel()
	s := NewServer(t, WithDialect("square"))
	post := func(body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+"/v1/payments", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	status, first := post(`{"amount":1000,"currency":"EUR","idempotency_key":"sq-7"}`)
	require.Equal(t, http.StatusCreated, status, first)
	status, replay := post(`{"amount":1000,"currency":"EUR","idempotency_key":"sq-7"}`)
	assert.Equal(t, http.StatusCreated, status)
	assert.Equal(t, first, replay)

	status, reused := post(`{"amount":1001,"currency":"EUR","idempotency_key":"sq-7"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, reused, `"code":"IDEMPOTENCY_KEY_REUSED"`)

	status, missing := post(`{"amount":1000,"currency":"EUR"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, missing, `"code":"MISSING_REQUIRED_PARAMETER"`)
	assert.Equal(t, 1, s.PaymentCount())
}

func TestWithDialect_UnknownName(t *testing.T) {
	t.Parallel()
	_, err := Start(WithDialect("braintree"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown dialect "braintree"`)
	assert.Contains(t, err.Error(), "adyen, checkout, idem, paypal, square, stripe")

	rec := &recordingTB{TB: t}
	assert.Nil(t, NewServer(rec, WithDialect("braintree")))
	require.Len(t, rec.fatal, 1)
	assert.Contains(t, rec.fatal[0], `unknown dialect "braintree"`)
}
