package idem

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
)

// stripeDeclineServer speaks Stripe's documented shape
// (https://docs.stripe.com/api/idempotent_requests): the first request of a
// key runs and its answer is saved, here a card decline (402 card_error),
// which the server then loses on the way; a retry with the key gets the
// saved answer marked Idempotent-Replayed: true
// (https://docs.stripe.com/error-low-level). It counts the executions.
type stripeDeclineServer struct {
	*httptest.Server
	mu       sync.Mutex
	saved    map[string]bool
	executed int
}

const stripeDecline = `{"error":{"type":"card_error","code":"card_declined","message":"Your card was declined."}}`

func newStripeDeclineServer(t *testing.T) *stripeDeclineServer {
	t.Helper()
	s := &stripeDeclineServer{saved: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		key := r.Header.Get("Idempotency-Key")
		s.mu.Lock()
		replay := s.saved[key]
		if !replay {
			s.saved[key] = true
			s.executed++
		}
		s.mu.Unlock()
		if !replay {
			// Executed and saved; the answer is lost with the connection.
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Idempotent-Replayed", "true")
		w.WriteHeader(http.StatusPaymentRequired)
		_, _ = io.WriteString(w, stripeDecline)
	}))
	t.Cleanup(s.Close)
	return s
}

// A replayed Stripe 4xx is the saved final answer of the request's first
// execution: it settles the intent as that answer does, Failed with
// ErrFinalFailure and the decline stored, instead of leaving it Pending
// forever with every resend getting the same replay.
func TestAReplayedStripeDeclineSettlesTheIntent(t *testing.T) {
	t.Parallel()
	srv := newStripeDeclineServer(t)
	c := newTestClient(t, WithDialect(dialect.Stripe()))
	in := begin(t, c, "order-decline/payment", paymentRequest(t, srv.URL, 100, "decline"))
	resp, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrFinalFailure)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusPaymentRequired, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), "card_declined")
	assert.Equal(t, Failed, in.State)
	assert.Equal(t, 2, in.Attempts, "the lost answer, then its replay")

	again, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrFinalFailure)
	assert.True(t, IsLocalReplay(again), "settled: replayed from the keystore")
	assert.Equal(t, 1, srv.executed)
}
