package idem

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// drainedRequest is a payment whose body a logger read before Begin saw
// it: a reader net/http cannot rewind (no GetBody), drained, with its
// length declared (declared) or unknown.
func drainedRequest(t *testing.T, url string, declared bool) *http.Request {
	t.Helper()
	body := `{"amount": 100, "currency": "EUR", "reference": "drained"}`
	req, err := http.NewRequest(http.MethodPost, url+"/v1/payments", io.NopCloser(strings.NewReader(body)))
	require.NoError(t, err)
	require.Nil(t, req.GetBody, "a reader net/http cannot rewind")
	if declared {
		req.ContentLength = int64(len(body))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	logged, err := io.ReadAll(req.Body)
	require.NoError(t, err)
	require.Equal(t, body, string(logged))
	return req
}

// A request whose body was already read is refused with ErrBodyConsumed,
// by Begin and by Transport, instead of becoming an empty payment.
func TestAConsumedBodyIsRefused(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	for name, declared := range map[string]bool{"length declared": true, "length unknown": false} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Begin(context.Background(), "order-drained/"+name, drainedRequest(t, srv.URL, declared))
			require.ErrorIs(t, err, ErrBodyConsumed)
			require.ErrorIs(t, err, ErrInvalidRequest)
			assert.Contains(t, err.Error(), "GetBody")

			api := &http.Client{Transport: c.Transport()}
			resp, err := api.Do(drainedRequest(t, srv.URL, declared))
			if resp != nil {
				resp.Body.Close()
			}
			require.ErrorIs(t, err, ErrBodyConsumed)
		})
	}
	pending, err := c.Pending(context.Background())
	require.NoError(t, err)
	assert.Empty(t, pending, "no intent was stored")
	assert.Zero(t, srv.Requests(), "nothing was sent")

	// An empty body said as net/http says it is no error.
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments", strings.NewReader(""))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	_, err = c.Begin(context.Background(), "order-empty/payment", req)
	require.NoError(t, err)
}
