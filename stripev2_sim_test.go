package idem

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// A Stripe v2 client whose first answer is lost resends with the same
// key and gets the finished request's answer: "If the first request
// succeeded, the API skips making new changes"
// (https://docs.stripe.com/api-v2-overview#idempotency). v2 documents no
// replay marker, so the answer is not marked one; one payment.
func TestStripeV2Simulator_LostAnswerThenRetrySettles(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe-v2"))
	c := newTestClient(t, WithDialect(dialect.StripeV2()))
	srv.LoseNextResponses(1)
	in := begin(t, c, "stripe-v2/lost", paymentRequest(t, srv.URL, 100, "stripe-v2-lost"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.False(t, IsReplay(resp), "v2 marks no replay")
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 2, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
}

// A 500 from inside Stripe v2's idempotency layer is not saved: "If the
// first request failed (or partially failed), the API re-executes the
// failed requests and returns the new response"
// (https://docs.stripe.com/api-v2-overview#idempotency). dialect.StripeV2
// resends with the key and the intent succeeds with one payment, where
// dialect.Stripe against the v1 simulator leaves the saved 500 for
// reconciliation (TestStripeSimulator_Replayed500LeftForReconciliation).
func TestStripeV2Simulator_Failed5xxIsExecutedOnRetry(t *testing.T) {
	t.Parallel()
	var year atomic.Int32
	year.Store(10000) // a time JSON cannot encode: the handler answers 500
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe-v2"),
		idemtest.WithClock(func() time.Time { return time.Date(int(year.Load()), 1, 1, 0, 0, 0, 0, time.UTC) }))
	c := newTestClient(t, WithDialect(dialect.StripeV2()), WithMaxAttempts(5),
		WithBackoffPolicy(func(int) time.Duration {
			year.Store(2026) // the server is fixed before the retry
			return time.Millisecond
		}))
	in := begin(t, c, "stripe-v2/500", paymentRequest(t, srv.URL, 100, "stripe-v2-500"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 2, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
}

// The same key with another body is refused with idempotency_error and
// the client reports ErrKeyReused; nothing more is paid.
func TestStripeV2Simulator_KeyReuseIsRefused(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe-v2"))
	sameKey := func() (string, error) { return "0b7c1d2e-3f40-4a5b-8c6d-7e8f90a1b2c3", nil }
	first := newTestClient(t, WithDialect(dialect.StripeV2()), WithKeyGenerator(sameKey))
	resp, err := first.Do(context.Background(), begin(t, first, "", paymentRequest(t, srv.URL, 100, "v2-reuse")))
	require.NoError(t, err)
	resp.Body.Close()

	second := newTestClient(t, WithDialect(dialect.StripeV2()), WithKeyGenerator(sameKey))
	in := begin(t, second, "", paymentRequest(t, srv.URL, 999, "v2-reuse"))
	_, err = second.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrKeyReused)
	assert.Equal(t, Failed, in.State)
	assert.Equal(t, 1, srv.PaymentCount())
}

// A duplicate sent while the original still runs meets a 409
// idempotency_key_in_use (Stripe's API-wide answer for a key "currently
// being used in another request", https://docs.stripe.com/error-codes;
// the v2 page names none of its own). dialect.StripeV2 retries it with the
// same key until the original has finished: one payment, both Succeeded.
func TestStripeV2Simulator_InProgressDuplicateIsRetried(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe-v2"))
	srv.SetHandlerDelay(300 * time.Millisecond)
	store := keystore.NewMemory()
	opts := []Option{WithStore(nopCloseStore{store}), WithDialect(dialect.StripeV2()), WithMaxAttempts(20),
		WithBackoffPolicy(func(int) time.Duration { return 50 * time.Millisecond })}
	a, b := newTestClient(t, opts...), newTestClient(t, append(opts, WithRequestEditor(bearer(testToken)))...)
	in := begin(t, a, "stripe-v2/dup", paymentRequest(t, srv.URL, 100, "stripe-v2-dup"))
	twin, err := b.Resume(context.Background(), in.Key)
	require.NoError(t, err)

	var wg sync.WaitGroup
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := a.Do(context.Background(), in)
		if err == nil {
			resp.Body.Close()
		}
		firstErr = err
	}()
	require.Eventually(t, func() bool { return srv.Holding() == 1 }, 5*time.Second, 5*time.Millisecond)
	resp, err := b.Do(context.Background(), twin)
	wg.Wait()
	require.NoError(t, firstErr)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, Succeeded, twin.State)
	assert.Greater(t, twin.Attempts, 1, "the 409 was retried")
	assert.Equal(t, 1, srv.PaymentCount())
}

// 5xx answers before the request ran (an overloaded front) are retried
// with the key until the request runs: one payment.
func TestStripeV2Simulator_5xxBeforeExecutionIsRetried(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe-v2"))
	c := newTestClient(t, WithDialect(dialect.StripeV2()))
	srv.FailNext(2, http.StatusBadGateway, 0)
	in := begin(t, c, "stripe-v2/502", paymentRequest(t, srv.URL, 100, "stripe-v2-502"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 3, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
}

// An intent whose answer was lost is still resent 29 days later, and the
// v2 simulator still knows its key: two requests are one when they
// "occur within 30 days of each other"
// (https://docs.stripe.com/api-v2-overview#idempotency). One payment.
// Under dialect.Stripe (v1, 24 h) the same intent is not resent a day on.
func TestStripeV2Simulator_ResentWithinThirtyDays(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		sim     string
		d       func() dialect.Dialect
		wait    time.Duration
		resends bool
	}{
		{"v2 after 29 days", "stripe-v2", dialect.StripeV2, 29 * 24 * time.Hour, true},
		{"v1 after 25 hours", "stripe", dialect.Stripe, 25 * time.Hour, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newTestClock()
			srv := idemtest.NewServer(t, idemtest.WithDialect(tt.sim), idemtest.WithClock(clock.Now))
			store := keystore.NewMemory()
			first := newTestClient(t, WithStore(nopCloseStore{store}), WithDialect(tt.d()), withClock(clock.Now), WithMaxAttempts(1))
			srv.LoseNextResponses(1)
			in := begin(t, first, "stripe/month", paymentRequest(t, srv.URL, 100, "stripe-month"))
			_, err := first.Do(context.Background(), in)
			require.ErrorIs(t, err, ErrOutcomeUnknown)
			require.Equal(t, 1, srv.PaymentCount())

			clock.Advance(tt.wait)
			later := newTestClient(t, WithStore(nopCloseStore{store}), WithDialect(tt.d()), withClock(clock.Now),
				WithRequestEditor(bearer(testToken)))
			again, err := later.Resume(context.Background(), in.Key)
			require.NoError(t, err)
			resp, err := later.Do(context.Background(), again)
			if !tt.resends {
				require.ErrorIs(t, err, ErrKeyExpired)
				assert.Equal(t, 1, srv.Requests(), "not resent")
				assert.Equal(t, 1, srv.PaymentCount())
				return
			}
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			assert.Equal(t, Succeeded, again.State)
			assert.Equal(t, 2, srv.Requests(), "resent once, answered from the key")
			assert.Equal(t, 1, srv.PaymentCount())
		})
	}
}
