package idem

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// A caller's own key, in any header spelling, is sent on every attempt;
// it is never replaced by a fresh one.
func TestTransportKeepsTheCallersKeyInAnySpelling(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var keys []string
	var n atomic.Int64
	f := newFront(t, "http://127.0.0.1:9", func(_ int, w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if n.Add(1) < 3 {
			answer(w, http.StatusServiceUnavailable, nil, "")
			return true
		}
		answer(w, http.StatusCreated, nil, "")
		return true
	})
	c := newTestClient(t)
	api := &http.Client{Transport: c.Transport()}
	req, err := http.NewRequest(http.MethodPost, f.URL+"/v1/payments", strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	req.Header["idempotency-key"] = []string{"caller-key-1"} // not the canonical spelling
	resp, err := api.Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, []string{"caller-key-1", "caller-key-1", "caller-key-1"}, keys)
}

// A method the transport does not key is not resent after a 5xx, which
// may follow an executed request.
func TestTransportDoesNotResendMethodsItDoesNotKey(t *testing.T) {
	t.Parallel()
	for _, method := range []string{"CHARGE", "post"} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			var n atomic.Int64
			f := newFront(t, "http://127.0.0.1:9", func(_ int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
				n.Add(1)
				answer(w, http.StatusBadGateway, nil, "")
				return true
			})
			c := newTestClient(t)
			api := &http.Client{Transport: c.Transport()}
			req, err := http.NewRequest(method, f.URL+"/v1/charge", strings.NewReader("x"))
			require.NoError(t, err)
			resp, err := api.Do(req)
			require.NoError(t, err, "a final answer, as a plain transport gives it")
			assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
			assert.EqualValues(t, 1, n.Load(), "sent once")
		})
	}
}

// signingTransport is a caller's own RoundTripper.
type signingTransport struct {
	rt    http.RoundTripper
	calls atomic.Int64
}

func (c *signingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	r.Header.Set("X-Signed", "yes")
	return c.rt.RoundTrip(r)
}

// WithBaseTransport puts idem's keys and retries on top of a caller's
// RoundTripper: every attempt goes through it.
func TestWithBaseTransportWrapsTheCallersRoundTripper(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	base := &signingTransport{rt: http.DefaultTransport}
	c := newTestClient(t, WithBaseTransport(base))
	srv.FailNext(2, http.StatusServiceUnavailable, 0)
	api := &http.Client{Transport: c.Transport()}
	resp, err := api.Do(paymentRequest(t, srv.URL, 100, "base"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.EqualValues(t, 3, base.calls.Load())
	assert.Equal(t, 1, srv.PaymentCount())
	_, err = New(WithBaseTransport(nil))
	assert.Error(t, err)
}
