package idem

import (
	"context"
	"net/http"
	"strings"
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

// The client speaking dialect.Checkout against the Checkout.com simulator
// (idemtest.WithDialect("checkout")), both written from Checkout.com's
// pages apart from each other. Checkout.com keeps only 2xx answers, so the
// tests check that a lost answer is resent and replayed, and that no
// answer it does not keep is followed by a blind resend.

func newCheckoutClient(t *testing.T, opts ...Option) *Client {
	t.Helper()
	return newTestClient(t, append([]Option{WithDialect(dialect.Checkout())}, opts...)...)
}

// A lost answer is resent with the same key; the kept 201 comes back and
// the payment is made once.
func TestCheckoutSimulator_LostAnswerIsReplayed(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"))
	c := newCheckoutClient(t)
	srv.LoseNextResponses(1)
	in := begin(t, c, "cko/lost", paymentRequest(t, srv.URL, 100, "cko-lost"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	body := readBody(t, resp)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Contains(t, body, `"id":"pay_`)
	assert.Equal(t, dialect.OperationSucceeded, dialect.Checkout().OperationStatus([]byte(body)),
		"the dialect reads the simulator's payment as Checkout.com's: %s", body)
	assert.NotEmpty(t, resp.Header.Get("Cko-Request-Id"))
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 2, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
	assert.Equal(t, 2, srv.Requests())
}

// A 5xx is not kept: a resend with the key would run the payment again,
// and nothing says the 5xx ran nothing. The client stops after it, the
// intent unsettled for a reconciliation, and sends nothing more.
func TestCheckoutSimulator_5xxIsNotResentBlindly(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable} {
		srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"))
		c := newCheckoutClient(t, WithMaxAttempts(5))
		srv.FailNext(1, status, 0)
		in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "cko-5xx"))
		_, err := c.Do(context.Background(), in)
		require.ErrorIs(t, err, ErrOutcomeUnknown, "status %d", status)
		assert.Equal(t, Pending, in.State, "status %d: unsettled, resumable", status)
		assert.Equal(t, 1, in.Attempts, "status %d", status)
		assert.Equal(t, 1, srv.Requests(), "status %d: no blind resend", status)
	}
}

// Why the client does not resend after a 5xx: the payments handler
// answers 500 from inside the idempotency layer, and the simulator, as
// Checkout.com documents, keeps nothing of it, so the same key runs the
// request again.
func TestCheckoutSimulator_5xxFromTheHandlerFreesTheKey(t *testing.T) {
	t.Parallel()
	var year atomic.Int32
	year.Store(10000) // a time JSON cannot encode: the handler answers 500
	srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"),
		idemtest.WithClock(func() time.Time { return time.Date(int(year.Load()), 1, 1, 0, 0, 0, 0, time.UTC) }))
	c := newCheckoutClient(t, WithMaxAttempts(5))
	in := begin(t, c, "cko/500", paymentRequest(t, srv.URL, 100, "cko-500"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 1, in.Attempts)

	// Sent again with the same key, by hand, once the server is fixed: it
	// runs (here it had not taken effect; at Checkout.com nothing says so).
	year.Store(2026)
	req := paymentRequest(t, srv.URL, 100, "cko-500")
	req.Header.Set("Cko-Idempotency-Key", in.Key)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 1, srv.PaymentCount())
}

// A rate-limited request "can then be safely retried": the client retries
// it with the same key.
func TestCheckoutSimulator_429IsRetried(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"))
	c := newCheckoutClient(t)
	srv.FailNext(2, http.StatusTooManyRequests, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "cko-429"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 3, in.Attempts)
	assert.Equal(t, 1, srv.PaymentCount())
}

// A validation error (422 request_invalid) is not kept and says the
// request was not processed: with nothing sent before, the intent fails.
func TestCheckoutSimulator_ValidationErrorFails(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"))
	c := newCheckoutClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 0, "cko-422"))
	resp, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrFinalFailure)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Contains(t, readBody(t, resp), `"error_type":"request_invalid"`)
	assert.Equal(t, Failed, in.State)
	assert.Zero(t, srv.PaymentCount())
}

// Two processes sharing one keystore send the same intent at once: the
// second meets the first still running, gets 409, waits and gets the kept
// 201. One payment.
func TestCheckoutSimulator_DuplicateInProgressWaits(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"))
	srv.SetHandlerDelay(200 * time.Millisecond)
	store := keystore.NewMemory()
	opts := []Option{WithStore(nopCloseStore{store}), WithMaxAttempts(10),
		WithBackoffPolicy(func(int) time.Duration { return 50 * time.Millisecond })}
	a := newCheckoutClient(t, opts...)
	b := newCheckoutClient(t, append(opts, WithRequestEditor(bearer(testToken)))...)
	in := begin(t, a, "cko/dup", paymentRequest(t, srv.URL, 100, "cko-dup"))
	twin, err := b.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var errA, errB error
	var bodyA, bodyB string
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := a.Do(context.Background(), in)
		if errA = err; err == nil {
			bodyA = readBody(t, resp)
		}
	}()
	// The twin goes once the original holds its key on the server, not
	// after a sleep that a slow machine can outlast before the original
	// is even sent (the wait's bound only stops a hang).
	require.Eventually(t, func() bool { return srv.Holding() == 1 || srv.PaymentCount() > 0 }, 30*time.Second, time.Millisecond,
		"the original reached the server")
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := b.Do(context.Background(), twin)
		if errB = err; err == nil {
			bodyB = readBody(t, resp)
		}
	}()
	wg.Wait()
	require.NoError(t, errA)
	require.NoError(t, errB)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, Succeeded, twin.State)
	assert.Equal(t, bodyA, bodyB, "the duplicate gets the kept answer")
	assert.GreaterOrEqual(t, twin.Attempts, 2, "the duplicate met the 409 first")
	assert.Equal(t, 1, srv.PaymentCount())
}

// The same key with another body: Checkout.com's page compares nothing
// but the key ("Subsequent requests with the same key will return the same
// HTTP status code and response body as the original request") and names
// no key-reuse error, so the simulator answers the first payment and the
// client cannot tell. Keys from NewKeyV4 never collide; a caller's own
// keys must be unique per intent.
func TestCheckoutSimulator_KeyReusedGetsTheFirstAnswer(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t, idemtest.WithDialect("checkout"))
	sameKey := func() (string, error) { return "5e1f6c1a-4b5d-4c6e-8f70-81a2b3c4d5e6", nil }
	first := newCheckoutClient(t, WithKeyGenerator(sameKey))
	resp, err := first.Do(context.Background(), begin(t, first, "", paymentRequest(t, srv.URL, 100, "reuse")))
	require.NoError(t, err)
	firstBody := readBody(t, resp)

	second := newCheckoutClient(t, WithKeyGenerator(sameKey))
	resp, err = second.Do(context.Background(), begin(t, second, "", paymentRequest(t, srv.URL, 999, "reuse")))
	require.NoError(t, err)
	body := readBody(t, resp)
	assert.Equal(t, firstBody, body)
	assert.True(t, strings.Contains(body, `"amount":100`), body)
	assert.Equal(t, 1, srv.PaymentCount())
}
