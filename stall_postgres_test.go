package idem

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// postgresBehindPauseProxy opens a Postgres keystore in a fresh schema
// whose connections go through a proxy the test can stall: paused, it
// keeps every connection open and forwards nothing, as a partitioned
// database does, so only the client's own bounds end a wait.
func postgresBehindPauseProxy(t *testing.T) (*pgkeystore.Store, *testenv.PauseProxy) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_store_stall_")
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	st, err := pgkeystore.Open(context.Background(), u.String(), &pgkeystore.Options{Schema: schema})
	require.NoError(t, err)
	return st, proxy
}

// doWithin runs Do on its own goroutine and fails the test if it has not
// returned within the hang guard: a Do that hangs fails the test instead
// of hanging it. The guard is never what a test asserts.
func doWithin(t *testing.T, c *Client, ctx context.Context, in *Intent) (*http.Response, error) {
	t.Helper()
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Do(ctx, in)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		return r.resp, r.err
	case <-time.After(hangGuard):
		t.Fatalf("Do did not return within %s", hangGuard)
		return nil, nil
	}
}

// The Postgres keystore stalls while the payment is on the wire: the
// answer's write, the lookup of what the keystore holds and the claim's
// release all wait on a silent connection. Do gives them one write grace
// after its deadline, not one grace per wait: every wait that ran out had
// the deadline plus the grace as its limit. The intent stays Pending and
// its resume pays nothing more.
func TestDoOnAStalledPostgresTakesOneGraceAfterItsDeadline(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	st, proxy := postgresBehindPauseProxy(t)
	origin := idemtest.NewServer(t)
	f := newFront(t, origin.URL, func(n int, w http.ResponseWriter, r *http.Request, forward http.Handler) bool {
		if n == 1 {
			proxy.Pause() // the payment is on the wire; the keystore stalls
		}
		return false
	})
	c := newTestClient(t, WithStore(st), WithWriteGrace(grace))
	t.Cleanup(proxy.Resume) // runs before the client closes the keystore: a call a failing test left stalled ends
	in := begin(t, c, "order-stall/payment", paymentRequest(t, f.URL, 100, "stall"))

	var waits storeWaits
	ctx, cancel := context.WithTimeout(waits.watch(context.Background()), answerWithin)
	defer cancel()
	deadline, _ := ctx.Deadline()
	resp, err := doWithin(t, c, ctx, in)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrStoreTimeout)
	assert.Contains(t, err.Error(), "storing the answer")
	require.NotNil(t, resp, "the server's answer still comes back")
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, Pending, in.State, "the intent as the keystore last recorded it")
	requireOneGrace(t, &waits, deadline, deadline.Add(grace))

	proxy.Resume()
	got, err := c.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	if got.State == Pending {
		resp, err = c.Do(context.Background(), got)
		require.NoError(t, err)
		assert.True(t, IsReplay(resp), "the resume gets the server's replay")
	}
	assert.Equal(t, 1, origin.PaymentCount())
}

// Without a deadline, Do on a Postgres keystore that stalls before it
// starts is bounded by the store timeout: it returns an error matching
// ErrStoreTimeout, having sent nothing: the wait that ran out first had
// the store timeout from its start as its limit, and any later one the
// call's one grace. The intent pays once when the keystore answers again.
func TestDoWithoutADeadlineOnAStalledPostgresIsBoundedByTheStoreTimeout(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	st, proxy := postgresBehindPauseProxy(t)
	srv := idemtest.NewServer(t)
	c := newTestClient(t, WithStore(st), WithWriteGrace(time.Second), WithStoreTimeout(timeout))
	t.Cleanup(proxy.Resume) // runs before the client closes the keystore: a call a failing test left stalled ends
	in := begin(t, c, "order-nodeadline/payment", paymentRequest(t, srv.URL, 100, "nodeadline"))

	proxy.Pause()
	var waits storeWaits
	_, err := doWithin(t, c, waits.watch(context.Background()), in)
	require.ErrorIs(t, err, ErrStoreTimeout)
	assert.Equal(t, Pending, in.State)
	assert.Zero(t, srv.Requests(), "nothing is sent for an intent the keystore cannot claim")
	requireFirstWaitBoundedBy(t, &waits, timeout)

	proxy.Resume()
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, 1, srv.PaymentCount())
}

// Begin without a deadline on a stalled Postgres keystore is bounded too:
// its write runs out of the store timeout, the keystore cannot be asked
// whether it landed, and the error carries the key to resume it by.
func TestBeginWithoutADeadlineOnAStalledPostgresIsBounded(t *testing.T) {
	t.Parallel()
	st, proxy := postgresBehindPauseProxy(t)
	c := newTestClient(t, WithStore(st), WithWriteGrace(200*time.Millisecond), WithStoreTimeout(time.Second))
	t.Cleanup(proxy.Resume) // runs before the client closes the keystore: a call a failing test left stalled ends
	proxy.Pause()
	var waits storeWaits
	done := make(chan error, 1)
	go func() {
		_, err := c.Begin(waits.watch(context.Background()), "order-begin-stall/payment", paymentRequest(t, "https://api.example.com", 100, "begin-stall"))
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(hangGuard):
		t.Fatal("Begin did not return on a stalled keystore")
	}
	// Begin first looks the name up under other principals: that read
	// runs out of the store timeout before anything is created, so the
	// caller may simply begin the same name again.
	require.ErrorIs(t, err, ErrStoreTimeout)
	requireFirstWaitBoundedBy(t, &waits, time.Second)
	proxy.Resume()
	in, err := c.Begin(context.Background(), "order-begin-stall/payment", paymentRequest(t, "https://api.example.com", 100, "begin-stall"))
	require.NoError(t, err)
	pending, err := c.Pending(context.Background())
	require.NoError(t, err)
	require.Len(t, pending, 1, "one intent, the one begun once the keystore answered")
	assert.Equal(t, in.Key, pending[0].Key)
}

// ClaimPending without a deadline on a stalled Postgres keystore ends with
// the store timeout instead of waiting for the database.
func TestClaimPendingWithoutADeadlineOnAStalledPostgresIsBounded(t *testing.T) {
	t.Parallel()
	st, proxy := postgresBehindPauseProxy(t)
	c := newTestClient(t, WithStore(st), WithWriteGrace(200*time.Millisecond), WithStoreTimeout(time.Second))
	t.Cleanup(proxy.Resume) // runs before the client closes the keystore: a call a failing test left stalled ends
	proxy.Pause()
	var waits storeWaits
	done := make(chan error, 1)
	go func() {
		_, err := c.ClaimPending(waits.watch(context.Background()), 10)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrStoreTimeout)
		requireFirstWaitBoundedBy(t, &waits, time.Second)
	case <-time.After(hangGuard):
		t.Fatal("ClaimPending did not return on a stalled keystore")
	}
	proxy.Resume()
}
