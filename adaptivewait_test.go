package idem

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// acquireAsync runs b.acquire on its own goroutine and returns where its
// result arrives.
func acquireAsync(ctx context.Context, b *AdaptiveBudget) <-chan error {
	done := make(chan error, 1)
	go func() { done <- b.acquire(ctx, time.Now) }()
	return done
}

// waitForWaiters polls until n retries wait on b (bounded by the test's
// own timeout through require.Eventually).
func waitForWaiters(t *testing.T, b *AdaptiveBudget, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return b.State(time.Now()).Waiting == n }, 10*time.Second, time.Millisecond)
}

func TestAcquireTakesATokenAtOnce(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 2, MinPerSecond: -1})
	require.NoError(t, b.acquire(context.Background(), time.Now))
	require.NoError(t, b.acquire(context.Background(), time.Now))
	st := b.State(time.Now())
	assert.Zero(t, st.Tokens)
	assert.Equal(t, int64(2), st.Retries)
	assert.Zero(t, st.Waiting)
}

// In overload a retry without a token waits for the one the next accept
// brings, first come first served.
func TestAcquireWaitsForAcceptsInOrder(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1})
	b.Accepted(time.Now()) // the server accepts: overload, not down
	first := acquireAsync(context.Background(), b)
	waitForWaiters(t, b, 1)
	second := acquireAsync(context.Background(), b)
	waitForWaiters(t, b, 2)

	b.Accepted(time.Now())
	require.NoError(t, <-first, "the first to wait takes the first token")
	select {
	case err := <-second:
		t.Fatalf("second retry went without a token: %v", err)
	default:
	}
	b.Accepted(time.Now())
	require.NoError(t, <-second)
	st := b.State(time.Now())
	assert.Zero(t, st.Waiting)
	assert.Zero(t, st.Tokens, "each accept's token went to a waiting retry")
}

// Before any accept, a retry is held; the first accept releases it.
func TestAcquireHoldsUntilTheFirstAccept(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, Patience: time.Minute, PatienceDebt: 1})
	assert.False(t, b.refuseAtOnce(time.Now()), "too early to call the server down")
	held := acquireAsync(context.Background(), b)
	waitForWaiters(t, b, 1)
	b.Accepted(time.Now())
	require.NoError(t, <-held)
}

// A server that accepts nothing for the patience is down: the held retry
// is refused and never sent, and the next one is refused at once.
func TestAcquireRefusesWhenThePatienceEndsWithoutAccept(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, Patience: 20 * ms, PatienceDebt: 1})
	assert.False(t, b.refuseAtOnce(time.Now()))
	err := b.acquire(context.Background(), time.Now)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	st := b.State(time.Now())
	assert.Zero(t, st.Waiting)
	assert.Zero(t, st.Tokens, "a refused retry owes nothing")
	assert.Equal(t, int64(1), st.Refused)
	assert.True(t, b.refuseAtOnce(time.Now()), "down: refused before the backoff")
}

func TestAcquireBoundsItsWait(t *testing.T) {
	t.Parallel()
	t.Run("MaxDelay", func(t *testing.T) {
		t.Parallel()
		b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, MaxDelay: 20 * ms})
		b.Accepted(time.Now())
		require.ErrorIs(t, b.acquire(context.Background(), time.Now), ErrBudgetExhausted)
		assert.Zero(t, b.State(time.Now()).Waiting)
	})
	t.Run("deadline", func(t *testing.T) {
		t.Parallel()
		b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1})
		b.Accepted(time.Now())
		ctx, cancel := context.WithTimeout(context.Background(), 20*ms)
		defer cancel()
		require.ErrorIs(t, b.acquire(ctx, time.Now), ErrBudgetExhausted, "no token before the deadline")
	})
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1})
		b.Accepted(time.Now())
		ctx, cancel := context.WithCancel(context.Background())
		done := acquireAsync(ctx, b)
		waitForWaiters(t, b, 1)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		assert.Zero(t, b.State(time.Now()).Waiting, "a cancelled retry leaves the queue")
		b.Accepted(time.Now())
		assert.Equal(t, 0.0, b.State(time.Now()).Tokens, "capacity -1: no token kept for a retry that left")
	})
	t.Run("down after an overload", func(t *testing.T) {
		t.Parallel()
		b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, Window: 50 * ms, Patience: 10 * ms})
		b.Accepted(time.Now())
		require.ErrorIs(t, b.acquire(context.Background(), time.Now), ErrBudgetExhausted,
			"the last accept left the window and none followed")
	})
}

// A clock that stands still never ends the patience; the wait is still
// bounded, by MaxDelay on the real clock.
func TestAcquireWithAStoppedClockIsBounded(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, Patience: 5 * ms, PatienceDebt: 1, MaxDelay: 30 * ms})
	stopped := func() time.Time { return t0 }
	require.ErrorIs(t, b.acquire(context.Background(), stopped), ErrBudgetExhausted)
	assert.Zero(t, b.State(t0).Waiting)
}

// Before a first accept, at most PatienceDebt retries are held.
func TestAcquireHoldsAtMostPatienceDebt(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, Patience: time.Minute, PatienceDebt: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	one, two := acquireAsync(ctx, b), acquireAsync(ctx, b)
	waitForWaiters(t, b, 2)
	require.ErrorIs(t, b.acquire(ctx, time.Now), ErrBudgetExhausted, "a third is refused at once")
	b.Accepted(time.Now())
	b.Accepted(time.Now())
	require.NoError(t, <-one)
	require.NoError(t, <-two)
}

// The floor funds the retry at the head of the queue when nothing is
// accepted for a while.
func TestAcquireFloorFundsTheHead(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 1, MinPerSecond: 50})
	require.NoError(t, b.acquire(context.Background(), time.Now))
	b.Accepted(time.Now())
	require.NoError(t, b.acquire(context.Background(), time.Now), "the accept's token")
	require.NoError(t, b.acquire(context.Background(), time.Now), "the floor's, a 50th of a second later")
}

// Many goroutines of one Client: every retry ends, and no more are
// granted than the bucket, the accepts and the floor paid for.
func TestAcquireConcurrentUseGrantsOnlyWhatWasPaid(t *testing.T) {
	t.Parallel()
	const capacity, accepts, retries = 10, 200, 400
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: capacity, MinPerSecond: -1, MaxDelay: 200 * ms})
	b.Accepted(time.Now())
	var granted, refused atomic.Int64
	var wg sync.WaitGroup
	for range retries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := b.acquire(context.Background(), time.Now); {
			case err == nil:
				granted.Add(1)
			case errors.Is(err, ErrBudgetExhausted):
				refused.Add(1)
			default:
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	for range accepts - 1 {
		b.Accepted(time.Now())
	}
	wg.Wait()
	assert.Equal(t, int64(retries), granted.Load()+refused.Load())
	assert.LessOrEqual(t, granted.Load(), int64(capacity+accepts))
	assert.Zero(t, b.State(time.Now()).Waiting)
}

// Through a Client: a retry refused after its backoff, because the server
// accepted nothing for the patience, ends the call with the budget's
// reason and the last answer, and leaves the intent pending.
func TestDoAdaptiveBudgetRefusalAfterTheWaitKeepsTheAnswer(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	budget := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 1, MinPerSecond: -1, Patience: 30 * ms})
	c := newTestClient(t, WithBudget(budget))
	srv.FailNext(10, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "adaptive-refused"))
	resp, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, 2, ge.Attempts, "the bucket's one retry, then the held one refused")
	assert.Equal(t, http.StatusServiceUnavailable, ge.LastStatus)
	require.NotNil(t, resp, "the last answer comes back with the give-up")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), "503")
	assert.Equal(t, Pending, in.State)
	assert.Equal(t, 2, srv.Requests(), "the held retry never reached the server")
}
