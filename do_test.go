package idem

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

func TestDoSucceedsAndReplaysLocally(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	ctx := context.Background()

	in := begin(t, c, "", paymentRequest(t, srv.URL, 1000, "order-1"))
	resp, err := c.Do(ctx, in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.False(t, IsReplay(resp))
	first := readBody(t, resp)
	assert.Contains(t, first, `"id"`)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 1, in.Attempts)

	srv.Close() // the replay must not need the network
	again, err := c.Do(ctx, in)
	require.NoError(t, err)
	assert.True(t, IsReplay(again))
	assert.True(t, IsLocalReplay(again))
	assert.Equal(t, http.StatusCreated, again.StatusCode)
	assert.Equal(t, first, readBody(t, again))
}

func TestDoLostResponsesPayOnce(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)

	const intents = 3
	for i := range intents {
		srv.LoseNextResponses(2) // the effect happens, the answer is lost, twice
		in := begin(t, c, "", paymentRequest(t, srv.URL, 100+i, "lost"))
		resp, err := c.Do(context.Background(), in)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.True(t, IsReplay(resp), "the answer after a lost response is the server's replay")
		assert.False(t, IsLocalReplay(resp))
	}
	assert.Equal(t, intents, srv.PaymentCount())
}

func TestDo503WithRetryAfterPaysOnce(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)

	srv.FailNext(2, http.StatusServiceUnavailable, time.Second)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 500, "busy"))
	start := time.Now()
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	// Two waits of at least the hint: a safe lower bound.
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)
	assert.Equal(t, 3, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestDoDeadlineShorterThanRetryAfterReturnsAtOnce(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)

	srv.FailNext(1, http.StatusServiceUnavailable, 30*time.Second)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 700, "deadline"))
	// A deadline far shorter than the hint but roomy enough for one
	// attempt on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Do(ctx, in)
	require.Error(t, err)
	assert.NoError(t, ctx.Err(), "Do returned before the deadline instead of sleeping into it")
	assert.ErrorIs(t, err, ErrWaitBeyondDeadline)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, 30*time.Second, ge.RetryAfter)
	assert.Equal(t, 1, ge.Attempts)
	assert.Equal(t, http.StatusServiceUnavailable, ge.LastStatus)
	assert.Equal(t, in.Key, ge.Key)
	// A plain 503 may come from a proxy that forwarded the request: the
	// client cannot tell it from one sent before the handler ran.
	assert.True(t, ge.OutcomeUnknown, "a plain 503 may follow an executed request")
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, Pending, in.State)
	assert.Equal(t, 1, in.Attempts)
	assert.Contains(t, in.LastError, "deadline")

	// The intent stays resumable with its key.
	resp, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestDoRetriesExhaustedStaysPendingWithUnknownOutcome(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t, WithMaxAttempts(2))

	// More losses than attempts: net/http may also resend once on a
	// reused connection (the key makes the request replayable to it).
	srv.LoseNextResponses(10)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 900, "unknown"))
	key := in.Key
	_, err := c.Do(context.Background(), in)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrRetriesExhausted)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.True(t, ge.OutcomeUnknown)
	assert.Equal(t, 2, ge.Attempts)
	assert.Error(t, ge.LastErr)
	assert.Equal(t, Pending, in.State)

	srv.ClearFaults()
	pending, err := c.Pending(context.Background())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.Equal(t, key, pending[0].Key)

	resp, err := c.Do(context.Background(), pending[0])
	require.NoError(t, err)
	assert.True(t, IsReplay(resp))
	assert.Equal(t, 1, srv.PaymentCount())
	assert.Equal(t, 3, pending[0].Attempts)
}

func TestDoInProgressWaitsForTheReplay(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	const key = "fixed-key-in-progress-0001"
	c := newTestClient(t, WithKeyGenerator(func() (string, error) { return key, nil }))

	// A raw request holds the key while the handler runs.
	srv.SetHandlerDelay(300 * time.Millisecond)
	raw := paymentRequest(t, srv.URL, 1200, "held")
	raw.Header.Set("Idempotency-Key", key)
	rawDone := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Do(raw)
		if err != nil {
			rawDone <- 0
			return
		}
		resp.Body.Close()
		rawDone <- resp.StatusCode
	}()
	// Held, not only arrived: the raw request must have reserved the key.
	require.Eventually(t, func() bool { return srv.Holding() >= 1 }, 5*time.Second, time.Millisecond)

	in := begin(t, c, "", paymentRequest(t, srv.URL, 1200, "held"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.True(t, IsReplay(resp))
	assert.GreaterOrEqual(t, in.Attempts, 2, "the first attempt met 409 in-progress")
	assert.Equal(t, http.StatusCreated, <-rawDone)
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestDoKeyReusedIsFinalAndNotRetried(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	const key = "fixed-key-reused-0001"
	c := newTestClient(t, WithKeyGenerator(func() (string, error) { return key, nil }))

	raw := paymentRequest(t, srv.URL, 100, "first payload")
	raw.Header.Set("Idempotency-Key", key)
	resp, err := srv.Client().Do(raw)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	before := srv.Requests()

	in := begin(t, c, "", paymentRequest(t, srv.URL, 200, "another payload"))
	resp, err = c.Do(context.Background(), in)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrKeyReused)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Equal(t, before+1, srv.Requests(), "a 422 is never retried")
	assert.Equal(t, Failed, in.State)

	// A Failed intent replays its answer and its error locally.
	again, err := c.Do(context.Background(), in)
	assert.ErrorIs(t, err, ErrKeyReused)
	assert.True(t, IsLocalReplay(again))
	assert.Equal(t, before+1, srv.Requests())
}

func TestDoFinalFailureIsStored(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)

	req := paymentRequest(t, srv.URL, 100, "x")
	req.Body = http.NoBody
	req.GetBody = nil
	req.ContentLength = 0
	in := begin(t, c, "", req) // no body: the server rejects it
	resp, err := c.Do(context.Background(), in)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrFinalFailure)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, resp.StatusCode, ge.LastStatus)
	assert.GreaterOrEqual(t, resp.StatusCode, 400)
	assert.Equal(t, Failed, in.State)
	assert.Equal(t, 0, srv.PaymentCount())
}

func TestDoConcurrentSendsOnce(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	srv.SetHandlerDelay(100 * time.Millisecond)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 300, "concurrent"))
	before := srv.Requests()

	const callers = 8
	var wg sync.WaitGroup
	statuses := make([]int, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Do(context.Background(), in)
			errs[i] = err
			if resp != nil {
				statuses[i] = resp.StatusCode
			}
		}()
	}
	wg.Wait()
	for i := range callers {
		assert.NoError(t, errs[i])
		assert.Equal(t, http.StatusCreated, statuses[i])
	}
	assert.Equal(t, before+1, srv.Requests(), "one request for eight concurrent calls")
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestDoExpiredIntentIsNeverResent(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newTestClient(t, WithRetention(time.Hour), withClock(clock))

	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "old"))
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()

	before := srv.Requests()
	resp, err := c.Do(context.Background(), in)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, ErrKeyExpired)
	assert.Equal(t, Expired, in.State)
	_, err = c.Do(context.Background(), in)
	assert.ErrorIs(t, err, ErrKeyExpired)
	assert.Equal(t, before, srv.Requests(), "an expired intent is never sent")
	pending, err := c.Pending(context.Background())
	require.NoError(t, err)
	assert.Empty(t, pending)
}

func TestDoBudgetExhausted(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t, WithBudget(NewBudget(1, 1, 0)))

	srv.FailNext(10, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "budget"))
	_, err := c.Do(context.Background(), in)
	assert.ErrorIs(t, err, ErrBudgetExhausted)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Equal(t, 2, ge.Attempts, "one retry from a bucket of one")
}

func TestDoTransportErrorsAreRetriedWithTheKey(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)

	srv.ResetNext(2)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "reset"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.GreaterOrEqual(t, in.Attempts, 2)
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestDoRequestEditorRunsOnEveryAttempt(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	var mu sync.Mutex
	calls := 0
	c := newTestClient(t, WithRequestEditor(func(_ context.Context, r *http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		r.Header.Set("Authorization", "Bearer "+testToken)
		return nil
	}))
	req := paymentRequest(t, srv.URL, 100, "editor")
	req.Header.Del("Authorization")
	srv.FailNext(1, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", req)
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, 2, calls)
	assert.Len(t, srv.Payments(testToken), 1, "the editor's credentials named the principal")

	failing := newTestClient(t, WithRequestEditor(func(context.Context, *http.Request) error {
		return errors.New("vault sealed")
	}))
	in = begin(t, failing, "", paymentRequest(t, srv.URL, 100, "editor-fails"))
	_, err = failing.Do(context.Background(), in)
	assert.ErrorContains(t, err, "vault sealed")
	assert.Equal(t, Pending, in.State)
}

func TestDoQuotedKeys(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t, WithQuotedKeys(true))
	srv.LoseNextResponses(1)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "quoted"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.True(t, IsReplay(resp), "the quoted key named the same intent on the retry")
	assert.Equal(t, 1, srv.PaymentCount())
}

func TestDoClosedClient(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "closed"))
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close is idempotent")
	_, err := c.Do(context.Background(), in)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = c.Begin(context.Background(), "", paymentRequest(t, srv.URL, 100, "closed"))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = c.Do(context.Background(), nil)
	assert.Error(t, err)
}
