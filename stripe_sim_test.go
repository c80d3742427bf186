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

// A Stripe client whose first answer is lost gets, on the retry, the
// simulator's replay marked Idempotent-Replayed: true
// (https://docs.stripe.com/error-low-level): the intent settles on it, and
// the caller can tell the effect happened once, earlier.
func TestStripeSimulator_LostAnswerThenReplaySettles(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe"))
	c := newTestClient(t, WithDialect(dialect.Stripe()))
	srv.LoseNextResponses(1)
	in := begin(t, c, "stripe/lost", paymentRequest(t, srv.URL, 100, "stripe-lost"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get(ReplayedHeader))
	assert.True(t, IsReplay(resp))
	assert.False(t, IsLocalReplay(resp), "the server's replay, not the keystore's")
	assert.NotEmpty(t, resp.Header.Get("Idempotency-Key"), "Stripe echoes the key")
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 2, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
}

// A duplicate sent while the original still runs meets Stripe's 409
// idempotency_key_in_use, which dialect.Stripe retries with the same key
// until the original's answer comes back as a replay: one payment, both
// intents Succeeded, the duplicate's answer marked replayed.
func TestStripeSimulator_InProgressDuplicateIsRetried(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe"))
	srv.SetHandlerDelay(300 * time.Millisecond)
	store := keystore.NewMemory()
	opts := []Option{WithStore(nopCloseStore{store}), WithDialect(dialect.Stripe()), WithMaxAttempts(20),
		WithBackoffPolicy(func(int) time.Duration { return 50 * time.Millisecond })}
	a, b := newTestClient(t, opts...), newTestClient(t, append(opts, WithRequestEditor(bearer(testToken)))...)
	in := begin(t, a, "stripe/dup", paymentRequest(t, srv.URL, 100, "stripe-dup"))
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
	// Send the twin once the original holds the key.
	require.Eventually(t, func() bool { return srv.Holding() == 1 }, 5*time.Second, 5*time.Millisecond)
	resp, err := b.Do(context.Background(), twin)
	wg.Wait()
	require.NoError(t, firstErr)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, Succeeded, twin.State)
	assert.Greater(t, twin.Attempts, 1, "the 409 was retried")
	assert.True(t, IsReplay(resp), "the twin settles on the original's replayed answer")
	assert.Equal(t, 1, srv.PaymentCount())
}

// A 500 Stripe saved once execution began comes back marked
// Idempotent-Replayed: true, and dialect.Stripe leaves it for
// reconciliation (ErrOutcomeUnknown) after that one retry instead of
// spending every attempt on a saved answer that will not change.
func TestStripeSimulator_Replayed500LeftForReconciliation(t *testing.T) {
	t.Parallel()
	var year atomic.Int32
	year.Store(10000) // a time JSON cannot encode: the handler answers 500
	srv := idemtest.NewServer(t, idemtest.WithDialect("stripe"),
		idemtest.WithClock(func() time.Time { return time.Date(int(year.Load()), 1, 1, 0, 0, 0, 0, time.UTC) }))
	c := newTestClient(t, WithDialect(dialect.Stripe()), WithMaxAttempts(5),
		WithBackoffPolicy(func(int) time.Duration {
			year.Store(2026) // the server is fixed; the saved 500 stays
			return time.Millisecond
		}))
	in := begin(t, c, "stripe/500", paymentRequest(t, srv.URL, 100, "stripe-500"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 2, in.Attempts, "the replayed 500 ends the retries")
	assert.NotEqual(t, Succeeded, in.State)
	assert.NotEqual(t, Failed, in.State)
	assert.Zero(t, srv.PaymentCount())
}
