package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// slowPayment is a handler with a counted effect that runs until the test
// lets it finish, as a payment call slower than a timeout does.
type slowPayment struct {
	paid     atomic.Int32
	release  chan struct{}
	finished chan struct{}
}

func newSlowPayment() *slowPayment {
	return &slowPayment{release: make(chan struct{}), finished: make(chan struct{}, 8)}
}

func (h *slowPayment) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	defer func() { h.finished <- struct{}{} }()
	n := h.paid.Add(1)
	<-h.release
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"payment":%d}`, n)
}

// waitFinished waits, within a bound, for one run of h to return.
func (h *slowPayment) waitFinished(t *testing.T) {
	t.Helper()
	select {
	case <-h.finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow handler did not return")
	}
}

// http.TimeoutHandler between the layer and the handler answers 503 while
// the handler still runs. The layer cannot see that goroutine, so a 503
// keeps the key reserved until its lease ends: a retry within the lease
// is answered 409 /in-progress and never runs the payment a second time,
// neither while the first run goes on nor after it finished.
func TestTimeoutHandlerInsideLayerDoesNotFreeTheKey(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	pay := newSlowPayment()
	wrapped := r.idem.Wrap(paymentsRoute, http.TimeoutHandler(pay, 5*time.Millisecond, "payment timed out"))

	first := serve(wrapped, post("key-1", paymentBody))
	require.Equal(t, http.StatusServiceUnavailable, first.Code)
	require.Equal(t, "payment timed out", first.Body.String())

	during := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusConflict, during.Code, "a retry while the timed-out handler runs")
	assert.Equal(t, server.ProblemInProgress, problemType(t, during))

	close(pay.release)
	pay.waitFinished(t)
	after := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusConflict, after.Code, "a retry within the lease, after the handler finished")
	assert.Equal(t, int32(1), pay.paid.Load(), "one payment for the key")
	assert.Contains(t, r.logs.String(), "keeping the key reserved until its lease ends")

	r.clock.Advance(server.DefaultLease + time.Second)
	taken := serve(wrapped, post("key-1", paymentBody))
	assert.NotEqual(t, http.StatusConflict, taken.Code, "after the lease a retry takes the key over, as after a crash")
	pay.waitFinished(t)
	assert.Equal(t, int32(2), pay.paid.Load())
}

// A 503 the handler answers itself keeps the key too: the layer cannot
// tell it from a timeout's, and a retry after the lease runs the handler.
func TestHandler503KeepsTheKeyUntilTheLeaseEnds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &statusHandler{status: http.StatusServiceUnavailable}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	assert.Equal(t, http.StatusServiceUnavailable, serve(wrapped, post("key-1", paymentBody)).Code)
	assert.Equal(t, http.StatusConflict, serve(wrapped, post("key-1", paymentBody)).Code)
	r.clock.Advance(server.DefaultLease + time.Second)
	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusServiceUnavailable, again.Code)
	assert.False(t, replayed(again), "a 503 is never stored")
	assert.Equal(t, int32(2), h.calls.Load())
}

// A 503 from a handler that says it ran nothing (Held.MarkNotExecuted)
// frees the key at once; so does a 503 answered after the client left,
// whose handler saw its context end.
func TestHandler503ThatRanNothingFreesTheKey(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"marked not executed", "client gone"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			var calls atomic.Int32
			var leave context.CancelFunc
			wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				calls.Add(1)
				if name == "marked not executed" {
					held, ok := server.HeldFrom(req.Context())
					require.True(t, ok)
					held.MarkNotExecuted()
				} else {
					leave() // the client goes away while the handler runs
				}
				w.WriteHeader(http.StatusServiceUnavailable)
			}))
			for range 2 {
				ctx, cancel := context.WithCancel(context.Background())
				leave = cancel
				rec := httptest.NewRecorder()
				wrapped.ServeHTTP(rec, post("key-1", paymentBody).request().WithContext(ctx))
				cancel()
				assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
			}
			assert.Equal(t, int32(2), calls.Load(), "the key was freed")
		})
	}
}

// http.TimeoutHandler outside the layer is the idempotency-aware timeout:
// the client gets the 503 at the limit while the layer goes on holding
// the key, so a retry gets 409 until the handler finishes and its answer,
// stored, is replayed from then on. One payment for the key.
func TestTimeoutHandlerOutsideLayerStoresTheLateAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	pay := newSlowPayment()
	layer := r.idem.Wrap(paymentsRoute, pay)
	first := serve(http.TimeoutHandler(layer, 5*time.Millisecond, "payment timed out"), post("key-1", paymentBody))
	require.Equal(t, http.StatusServiceUnavailable, first.Code)

	// The retries skip the timeout, so none of them can be cut short.
	wrapped := layer
	during := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusConflict, during.Code, "a retry while the handler runs")

	close(pay.release)
	pay.waitFinished(t)
	var again *httptest.ResponseRecorder
	require.Eventually(t, func() bool {
		again = serve(wrapped, post("key-1", paymentBody))
		return again.Code != http.StatusConflict
	}, 10*time.Second, time.Millisecond, "the late answer is stored")
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.True(t, replayed(again))
	assert.JSONEq(t, `{"payment":1}`, again.Body.String())
	assert.Equal(t, int32(1), pay.paid.Load(), "one payment for the key")
}
