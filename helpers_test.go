package idem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testToken is the bearer token (the principal) of the tests' payments.
const testToken = "tok_test_secret_4242"

// fastOptions keep retries quick: constant small backoff, no budget.
func fastOptions() []Option {
	return []Option{
		WithBackoffPolicy(func(int) time.Duration { return 5 * time.Millisecond }),
		WithBudget(nil),
	}
}

// newTestClient is a Client with an in-memory store and fast retries,
// closed when the test ends.
func newTestClient(t testing.TB, opts ...Option) *Client {
	t.Helper()
	c, err := New(append(fastOptions(), opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// paymentRequest is a POST /v1/payments with a JSON body and the token.
func paymentRequest(t testing.TB, baseURL string, amount int, reference string) *http.Request {
	t.Helper()
	body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": %q}`, amount, reference)
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req
}

// begin is Begin that must succeed.
func begin(t testing.TB, c *Client, name string, req *http.Request) *Intent {
	t.Helper()
	in, err := c.Begin(context.Background(), name, req)
	require.NoError(t, err)
	return in
}

// readBody reads a response body that must be readable.
func readBody(t testing.TB, resp *http.Response) string {
	t.Helper()
	require.NotNil(t, resp)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
