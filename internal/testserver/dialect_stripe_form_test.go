package testserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// postForm sends a form-encoded POST /v1/payments, as stripe-go sends its
// v1 calls, and returns the status and body.
func postForm(t *testing.T, base, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// Stripe's API takes form-encoded bodies, so the Stripe simulator does:
// a form-encoded payment is made, replayed under its key, refused as key
// reuse with another body, and validated field by field as JSON is.
func TestStripeDialect_AcceptsFormBodies(t *testing.T) {
	t.Parallel()
	ref, err := testserver.New(testserver.WithServerDialect("stripe"))
	require.NoError(t, err)
	ts := httptest.NewServer(ref.Handler())
	t.Cleanup(func() { ts.Close(); _ = ref.Close() })

	status, body := postForm(t, ts.URL, "form-1", url.Values{"amount": {"1500"}, "currency": {"EUR"}, "reference": {"0042"}}.Encode())
	require.Equal(t, http.StatusCreated, status, body)
	var p testserver.Payment
	require.NoError(t, json.Unmarshal([]byte(body), &p))
	assert.Equal(t, int64(1500), p.Amount)
	assert.Equal(t, "EUR", p.Currency)
	assert.Equal(t, "0042", p.Reference, "a reference of digits stays a string")

	status, replay := postForm(t, ts.URL, "form-1", url.Values{"amount": {"1500"}, "currency": {"EUR"}, "reference": {"0042"}}.Encode())
	assert.Equal(t, http.StatusCreated, status)
	assert.JSONEq(t, body, replay)

	status, body = postForm(t, ts.URL, "form-1", "amount=1501&currency=EUR&reference=0042")
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body, `"idempotency_error"`)

	for name, form := range map[string]string{
		"amount not a number": "amount=ten&currency=EUR",
		"unknown field":       "amount=1&currency=EUR&capture=true",
		"repeated field":      "amount=1&amount=2&currency=EUR",
		"missing currency":    "amount=1",
		"malformed":           "amount=1&currency=%zz",
	} {
		status, body := postForm(t, ts.URL, "bad-"+name, form)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %s", name, body)
		assert.Contains(t, body, `"invalid_request_error"`, name)
	}
	count, err := ref.Store().CountPayments(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, count)
}
