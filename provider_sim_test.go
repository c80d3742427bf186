package idem

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
)

// badYearServer is a simulator of dialect name whose payments handler
// answers 500 (a time JSON cannot encode) until fixed is called.
func badYearServer(t *testing.T, name string) (srv *idemtest.Server, fixed func()) {
	t.Helper()
	var year atomic.Int32
	year.Store(10000)
	srv = idemtest.NewServer(t, idemtest.WithDialect(name),
		idemtest.WithClock(func() time.Time { return time.Date(int(year.Load()), 1, 1, 0, 0, 0, 0, time.UTC) }))
	return srv, func() { year.Store(2026) }
}

// Adyen stores an error that is not transient "as the final result for the
// idempotency key" and marks no replay: dialect.Adyen leaves the intent
// for a reconciliation on the first such answer instead of resending into
// the stored 500.
func TestAdyenSimulator_Stored500LeftForReconciliation(t *testing.T) {
	t.Parallel()
	srv, fixed := badYearServer(t, "adyen")
	c := newTestClient(t, WithDialect(dialect.Adyen()), WithMaxAttempts(5),
		WithBackoffPolicy(func(int) time.Duration { fixed(); return time.Millisecond }))
	in := begin(t, c, "adyen/500", paymentRequest(t, srv.URL, 100, "adyen-500"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 1, in.Attempts, "a resend would only get the stored 500 back")
	assert.Equal(t, 1, srv.Requests())
	assert.NotEqual(t, Succeeded, in.State)
	assert.NotEqual(t, Failed, in.State)
	assert.Zero(t, srv.PaymentCount())
}

// An answer Adyen marks Transient-Error: true is retried with the same key
// and the retry runs as the first request.
func TestAdyenSimulator_TransientFaultIsRetried(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("adyen"))
	c := newTestClient(t, WithDialect(dialect.Adyen()))
	srv.FailNext(1, 500, 0)
	in := begin(t, c, "adyen/transient", paymentRequest(t, srv.URL, 100, "adyen-transient"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 2, in.Attempts)
	assert.Equal(t, in.Key, resp.Header.Get("Idempotency-Key"), "Adyen echoes the key on a 2xx")
	assert.Equal(t, 1, srv.PaymentCount())
}

// PayPal ("You can retry idempotent calls that fail with ... HTTP 5xx
// status codes") and Square (TEMPORARY_ERROR: "You can safely retry your
// call using the same idempotency key") keep no 5xx: the client's retry
// with the same key runs the request once.
func TestPayPalAndSquareSimulators_500IsRetriedAndRuns(t *testing.T) {
	t.Parallel()
	for name, d := range map[string]func() dialect.Dialect{"paypal": dialect.PayPal, "square": dialect.Square} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv, fixed := badYearServer(t, name)
			c := newTestClient(t, WithDialect(d()), WithMaxAttempts(5),
				WithBackoffPolicy(func(int) time.Duration { fixed(); return time.Millisecond }))
			in := begin(t, c, name+"/500", paymentRequest(t, srv.URL, 100, name+"-500"))
			resp, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, Succeeded, in.State)
			assert.Equal(t, 2, in.Attempts)
			assert.Equal(t, 1, srv.PaymentCount())
		})
	}
}
