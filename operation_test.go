package idem

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// testClock is a clock the test moves by hand.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock { return &testClock{now: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)} }

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// quickPolling polls every 10 ms, whatever Retry-After the server gives,
// for at most 5 s (tests that poll to the bound set a shorter one), on the
// test clock.
func quickPolling(clock *testClock) []Option {
	return []Option{
		WithPolling(10*time.Millisecond, 5*time.Second),
		WithRetryAfterCeiling(10 * time.Millisecond),
		WithRetention(time.Hour),
		withClock(clock.Now),
	}
}

// methodCounter counts the requests a client sends, by method.
type methodCounter struct{ posts, gets atomic.Int64 }

func (m *methodCounter) count(r *http.Request) {
	if r.Method == http.MethodPost {
		m.posts.Add(1)
	} else {
		m.gets.Add(1)
	}
}

// operationAnswering is an accepting server whose operation always
// answers status with body.
func operationAnswering(t *testing.T, status int, body string, polls *atomic.Int64) string {
	t.Helper()
	srv := acceptingServer(t, func(string) string { return "/v1/operations/op_1" }, func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	})
	return srv.URL
}

// The reference server hides another principal's operation behind a 404,
// as a poll without credentials sees it: within the grace the 404 is
// taken for a server that has not caught up and polled again; after it
// the operation is gone. The 202 proved the payout was taken, so the
// intent stays Accepted, its outcome unknown, listed for a reconciliation,
// and the payout is never resent.
func TestAcceptedOperationNotFoundAfterTheGraceIsGone(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithPayoutDelay(time.Hour))
	clock := newTestClock()
	var sent methodCounter
	c := newTestClient(t, append(quickPolling(clock),
		WithPolling(10*time.Millisecond, 300*time.Millisecond),
		WithOperationGrace(time.Minute),
		WithRequestEditor(func(_ context.Context, r *http.Request) error {
			sent.count(r)
			if r.Method == http.MethodGet {
				r.Header.Del("Authorization") // the operation is another principal's now
			}
			return nil
		}))...)
	ctx := context.Background()

	in := begin(t, c, "payout-404", payoutRequest(t, srv.URL))
	resp, err := c.Do(ctx, in)
	require.NoError(t, err, "a 404 within the grace is no verdict")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, in.State)
	assert.Equal(t, clock.Now(), in.AcceptedAt)
	assert.Contains(t, in.LastError, "status 404")
	assert.Greater(t, sent.gets.Load(), int64(1), "polled again within the grace")

	clock.Advance(2 * time.Minute)
	resp, err = c.Do(ctx, in)
	require.ErrorIs(t, err, ErrOperationGone)
	assert.ErrorIs(t, err, ErrOutcomeUnknown, "the 202 proved the payout was taken")
	assert.NotErrorIs(t, err, ErrFinalFailure)
	assert.NotErrorIs(t, err, ErrKeyExpired)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, http.StatusNotFound, ge.LastStatus)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode, "the stored answer is the 202")
	assert.Equal(t, Accepted, in.State)
	assert.Contains(t, in.LastError, "gone")

	again, err := c.Do(ctx, in)
	assert.ErrorIs(t, err, ErrOperationGone, "asked again, the operation is still gone")
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, http.StatusAccepted, again.StatusCode)
	assert.Equal(t, int64(1), sent.posts.Load(), "the payout is never resent")
	assert.Equal(t, 1, srv.Requests())

	pending, err := c.Pending(ctx)
	require.NoError(t, err)
	require.Len(t, pending, 1, "a gone operation is listed for a reconciliation")
	assert.Equal(t, in.Key, pending[0].Key)

	settled, err := c.Settle(ctx, in.Key, Settlement{Outcome: OutcomeSucceeded, By: "ops", Note: "payout po_1 found in the provider's dashboard"})
	require.NoError(t, err, "ErrOperationGone says reconcile it, and Settle takes it")
	assert.Equal(t, Succeeded, settled.State)
}

func TestAcceptedOperationGoneWithoutGrace(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusNotFound, http.StatusGone} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			var polls atomic.Int64
			url := operationAnswering(t, status, fmt.Sprintf(`{"type":"about:blank","status":%d}`, status), &polls)
			c := newTestClient(t, append(quickPolling(newTestClock()), WithOperationGrace(0))...)
			in := begin(t, c, "", paymentRequest(t, url, 1, "gone"))
			resp, err := c.Do(context.Background(), in)
			require.ErrorIs(t, err, ErrOperationGone)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.Equal(t, http.StatusAccepted, resp.StatusCode)
			assert.Equal(t, Accepted, in.State)
			assert.Equal(t, int64(1), polls.Load(), "the first 404 or 410 ends the call's polling")
		})
	}
}

// A final-looking 4xx to a poll of the operation proves nothing about the
// request the 202 accepted: polling stops for the call, the intent stays
// Accepted with its outcome unknown, and a later Do asks again. Before,
// these made the intent Failed, which reads as "nothing was charged".
func TestAcceptedOperationRefusedStaysAccepted(t *testing.T) {
	t.Parallel()
	const problem = `{"type":"https://errors.example/bad-operation","status":400}`
	for _, status := range []int{400, 405, 406, 409, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			var polls atomic.Int64
			url := operationAnswering(t, status, problem, &polls)
			c := newTestClient(t, quickPolling(newTestClock())...)
			in := begin(t, c, "", paymentRequest(t, url, 1, "refused"))

			resp, err := c.Do(context.Background(), in)
			require.ErrorIs(t, err, ErrOperationUnknown)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.NotErrorIs(t, err, ErrFinalFailure)
			assert.Equal(t, http.StatusAccepted, resp.StatusCode)
			assert.Equal(t, Accepted, in.State)
			assert.Contains(t, in.LastError, fmt.Sprintf("answered %d", status))
			assert.Equal(t, int64(1), polls.Load())

			_, err = c.Do(context.Background(), in)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.Equal(t, int64(2), polls.Load(), "a later Do asks the operation again")
			assert.Equal(t, Accepted, in.State)
		})
	}
}

// A 2xx operation document whose status no source of the dialect lists is
// no verdict: before, every such word made the intent Succeeded.
func TestAcceptedOperationUnknownWordStaysAccepted(t *testing.T) {
	t.Parallel()
	for _, word := range []string{"expired", "denied", "refused", "timed_out", "reversed", "returned",
		"unknown", "blocked", "voided", "on_hold", "requires_action", "partially_failed"} {
		t.Run(word, func(t *testing.T) {
			t.Parallel()
			var polls atomic.Int64
			url := operationAnswering(t, http.StatusOK, `{"id":"op_1","status":"`+word+`"}`, &polls)
			c := newTestClient(t, quickPolling(newTestClock())...)
			in := begin(t, c, "", paymentRequest(t, url, 1, word))
			resp, err := c.Do(context.Background(), in)
			require.ErrorIs(t, err, ErrOperationUnknown)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			assert.Equal(t, http.StatusAccepted, resp.StatusCode)
			assert.Equal(t, Accepted, in.State)
			assert.Contains(t, in.LastError, word)
			assert.Equal(t, int64(1), polls.Load(), "an unknown word ends the call's polling")
		})
	}
}

// An unproven poll answer asks the Reconciler, whose verdict settles the
// intent.
func TestAcceptedOperationUnprovenAsksTheReconciler(t *testing.T) {
	t.Parallel()
	var polls atomic.Int64
	url := operationAnswering(t, http.StatusOK, `{"status":"on_hold"}`, &polls)
	var asked atomic.Int64
	c := newTestClient(t, append(quickPolling(newTestClock()), WithReconciler(func(_ context.Context, in *Intent) (Reconciliation, error) {
		asked.Add(1)
		return Reconciliation{Outcome: OutcomeSucceeded, Evidence: "payout po_1 is paid"}, nil
	}))...)
	in := begin(t, c, "", paymentRequest(t, url, 1, "held"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, int64(1), asked.Load())
	assert.Equal(t, Succeeded, in.State)
}

// A poll refused for its credentials (a process resumed without
// WithRequestEditor) says nothing of the operation: the intent stays
// Accepted, and polling stops for the call.
func TestAcceptedOperationUnauthorizedStaysAccepted(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			var polls atomic.Int64
			url := operationAnswering(t, status, `{}`, &polls)
			c := newTestClient(t, quickPolling(newTestClock())...)
			in := begin(t, c, "", paymentRequest(t, url, 1, "creds"))
			resp, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			assert.Equal(t, http.StatusAccepted, resp.StatusCode)
			assert.Equal(t, Accepted, in.State)
			assert.Contains(t, in.LastError, fmt.Sprintf("status %d", status))
			assert.Equal(t, int64(1), polls.Load(), "no second poll in the call")
		})
	}
}

func TestOperationRefusedStatuses(t *testing.T) {
	t.Parallel()
	for _, code := range []int{400, 405, 406, 409, 412, 415, 422, 451, 499} {
		assert.True(t, operationRefused(code), "%d", code)
	}
	for _, code := range []int{200, 202, 302, 401, 403, 404, 407, 408, 410, 425, 429, 500, 501, 503} {
		assert.False(t, operationRefused(code), "%d", code)
	}
}

// An accepted intent whose operation gives no answer (5xx after every
// retry) stays Accepted until its 202 is older than the retention; then it
// is Expired, for reconciliation, and never polled again.
func TestAcceptedIntentWithoutAnswerExpiresAfterTheRetention(t *testing.T) {
	t.Parallel()
	var polls atomic.Int64
	url := operationAnswering(t, http.StatusServiceUnavailable, `{}`, &polls)
	clock := newTestClock()
	c := newTestClient(t, append(quickPolling(clock), WithMaxAttempts(2))...)
	ctx := context.Background()
	in := begin(t, c, "", paymentRequest(t, url, 1, "silent"))

	resp, err := c.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, in.State)
	assert.Contains(t, in.LastError, "polling the operation")

	clock.Advance(2 * time.Hour)
	resp, err = c.Do(ctx, in)
	assert.Nil(t, resp)
	require.ErrorIs(t, err, ErrKeyExpired)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, http.StatusServiceUnavailable, ge.LastStatus)
	assert.Equal(t, Expired, in.State)
	assert.Contains(t, in.LastError, "no answer")

	polled := polls.Load()
	_, err = c.Do(ctx, in)
	assert.ErrorIs(t, err, ErrKeyExpired)
	assert.Equal(t, polled, polls.Load(), "an expired intent is not polled")
	pending, err := c.Pending(ctx)
	require.NoError(t, err)
	assert.Empty(t, pending)
}

func TestAcceptedOperationGonePastTheRetentionExpires(t *testing.T) {
	t.Parallel()
	var polls atomic.Int64
	url := operationAnswering(t, http.StatusNotFound, `{}`, &polls)
	clock := newTestClock()
	c := newTestClient(t, append(quickPolling(clock), WithPolling(10*time.Millisecond, 0))...)
	in := begin(t, c, "", paymentRequest(t, url, 1, "forgotten"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, Accepted, in.State)

	c.cfg.pollMax = 5 * time.Second
	clock.Advance(2 * time.Hour)
	_, err = c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrKeyExpired, "the server may have forgotten the operation with the key")
	assert.Equal(t, Expired, in.State)
	assert.Contains(t, in.LastError, "gone")
}

// An operation the server still reports pending is followed whatever its
// age: the server has it and says so.
func TestAcceptedOperationStillPendingOutlivesTheRetention(t *testing.T) {
	t.Parallel()
	var polls atomic.Int64
	var final atomic.Bool
	srv := acceptingServer(t, func(string) string { return "/v1/operations/op_1" }, func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		if final.Load() {
			_, _ = w.Write([]byte(`{"status":"succeeded"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"processing"}`))
	})
	clock := newTestClock()
	c := newTestClient(t, append(quickPolling(clock), WithPolling(10*time.Millisecond, 300*time.Millisecond))...)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "slow"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, Accepted, in.State)

	clock.Advance(48 * time.Hour)
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, in.State)

	final.Store(true)
	resp, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, `{"status":"succeeded"}`, readBody(t, resp))
	assert.Equal(t, Succeeded, in.State)
}

// With nothing to poll (polling disabled, or a Location that is not an
// http URL), an accepted intent expires with the retention instead of
// being listed as pending for ever.
func TestAcceptedIntentWithNothingToPollExpires(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		location string
		polling  time.Duration
	}{
		"polling disabled":  {location: "/v1/operations/op_1", polling: 0},
		"unusable Location": {location: "mailto:ops@example.com", polling: 5 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := acceptingServer(t, func(string) string { return tc.location }, http.NotFound)
			clock := newTestClock()
			c := newTestClient(t, append(quickPolling(clock), WithPolling(10*time.Millisecond, tc.polling))...)
			in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "nothing"))
			_, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, Accepted, in.State)

			clock.Advance(30 * time.Minute)
			_, err = c.Do(context.Background(), in)
			require.NoError(t, err, "within the retention nothing changes")
			assert.Equal(t, Accepted, in.State)

			clock.Advance(time.Hour)
			_, err = c.Do(context.Background(), in)
			assert.ErrorIs(t, err, ErrKeyExpired)
			assert.Equal(t, Expired, in.State)
		})
	}
}

// A call whose deadline ends before the first poll is due learns nothing,
// so it changes nothing, whatever the intent's age.
func TestAcceptedIntentUnpolledForTheDeadlineIsKept(t *testing.T) {
	t.Parallel()
	var polls atomic.Int64
	url := operationAnswering(t, http.StatusServiceUnavailable, `{}`, &polls)
	clock := newTestClock()
	c := newTestClient(t, append(quickPolling(clock), WithPolling(time.Hour, 2*time.Hour))...)
	in := begin(t, c, "", paymentRequest(t, url, 1, "deadline"))
	// The deadline is far past any run's own time, and an hour before
	// the first poll: the call must see that at once and not wait it out.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Do(ctx, in)
	require.NoError(t, err)
	require.Equal(t, Accepted, in.State)
	require.NoError(t, ctx.Err(), "no wait past the deadline was started")

	clock.Advance(2 * time.Hour)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	resp, err := c.Do(ctx2, in)
	require.NoError(t, err)
	assert.NoError(t, ctx2.Err(), "no wait past the deadline was started")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, in.State)
	assert.Zero(t, polls.Load())
}

func TestWithOperationGraceRejectsNegative(t *testing.T) {
	t.Parallel()
	_, err := New(WithOperationGrace(-time.Second))
	assert.ErrorContains(t, err, "WithOperationGrace")
}
