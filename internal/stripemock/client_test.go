package stripemock_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/keystore"
)

// apiKey is a test-mode secret key; stripe-mock accepts any that looks
// like one (server.go's validateAuth).
const apiKey = "sk_test_idem"

// stripeClient is an idem client with Stripe's dialect, in-memory keystore
// and quick retries, closed when the test ends.
func stripeClient(t *testing.T, opts ...idem.Option) *idem.Client {
	t.Helper()
	base := []idem.Option{
		idem.WithDialect(dialect.Stripe()),
		idem.WithStore(keystore.NewMemory()),
		idem.WithBackoffPolicy(func(int) time.Duration { return 5 * time.Millisecond }),
		idem.WithBudget(nil),
	}
	c, err := idem.New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// formRequest is a Stripe API call as stripe-go makes it: a POST with an
// application/x-www-form-urlencoded body (nested parameters in brackets,
// metadata[order]=...) and the secret key as a bearer token.
func formRequest(t *testing.T, baseURL, path string, form url.Values) *http.Request {
	t.Helper()
	return postRequest(t, baseURL+path, "application/x-www-form-urlencoded", form.Encode())
}

// postRequest is a POST of body as contentType to target, with the secret
// key as a bearer token.
func postRequest(t *testing.T, target, contentType, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	return req
}

// stripeObject is what a test reads of a Stripe object or error document.
type stripeObject struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Amount int64  `json:"amount"`
	Error  *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// readObject reads resp's body as a Stripe document; it returns the body
// too, for messages.
func readObject(t *testing.T, resp *http.Response) (stripeObject, string) {
	t.Helper()
	require.NotNil(t, resp)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var o stripeObject
	require.NoError(t, json.Unmarshal(b, &o), string(b))
	return o, string(b)
}
