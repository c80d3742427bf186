package testserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two amounts one float64 cannot tell apart are two different payments:
// a retry carrying the other amount is a reused key, never a replay of the
// first payment.
func TestAmountsBeyondFloat64PrecisionAreNotOneRequest(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	first := pay("alice", "k-big")
	first.body = `{"amount":9007199254740993,"currency":"EUR"}`
	p := decodePayment(t, do(t, ts.Client(), ts.URL, first))
	require.Equal(t, int64(9007199254740993), p.Amount)

	other := first
	other.body = `{"amount":9007199254740992,"currency":"EUR"}`
	r := do(t, ts.Client(), ts.URL, other)
	assert.Equal(t, http.StatusUnprocessableEntity, r.status, "body: %s", r.body)
	assert.Equal(t, ProblemKeyReused, r.problemType())
	assert.Equal(t, 1, paymentCount(t, s))

	again := do(t, ts.Client(), ts.URL, first)
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "true", again.header.Get(ReplayedHeader))
}

// A 503 says the request was not executed (here: the client went away
// during the handler delay, before the payment was made). Even with
// WithServerStore5xx it must not become the key's final answer, or every
// retry for a whole retention window would be told to retry again.
func TestUnavailableIsNeverFinalEvenWithStore5xx(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, WithServerStore5xx(true))
	s.Faults().SetHandlerDelay(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	req := pay("alice", "k-503").request(t, ts.URL).WithContext(ctx)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Handler().ServeHTTP(rec, req)
	}()
	// Probing with a second request before the first one holds the key
	// would let the probe take the key and wait out the delay itself.
	scope := Scope{Principal: s.PrincipalOf("alice"), Method: http.MethodPost, Route: routePayments}
	require.Eventually(t, func() bool { return holdsReservation(s, scope, "k-503") },
		5*time.Second, time.Millisecond, "the first request holds the key")
	require.Equal(t, http.StatusConflict, do(t, ts.Client(), ts.URL, pay("alice", "k-503")).status)
	cancel()
	<-done
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, "body: %s", rec.Body)

	s.Faults().SetHandlerDelay(0)
	retry := do(t, ts.Client(), ts.URL, pay("alice", "k-503"))
	decodePayment(t, retry)
	assert.Empty(t, retry.header.Get(ReplayedHeader))
	assert.Equal(t, 1, paymentCount(t, s))
}

// holdsReservation reports whether key is reserved, not completed, in the
// memory store of s.
func holdsReservation(s *Server, scope Scope, key string) bool {
	rec, err := s.Store().(*MemoryStore).Lookup(context.Background(), scope, key)
	return err == nil && rec != nil && rec.State == StateReserved
}
