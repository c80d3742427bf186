package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// slowFront forwards to the reference server and moves clock on by
// perAttempt with every request it forwards, as attempts that each take
// that long would; it records how much of the retention (from created)
// was left when each attempt started.
type slowFront struct {
	*httptest.Server
	mu   sync.Mutex
	left []time.Duration
}

func newSlowFront(t *testing.T, origin string, clock *atomic.Int64, created time.Time, retention, perAttempt time.Duration) *slowFront {
	t.Helper()
	target, err := url.Parse(origin)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	f := &slowFront{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Unix(0, clock.Load())
		f.mu.Lock()
		f.left = append(f.left, created.Add(retention).Sub(now))
		f.mu.Unlock()
		clock.Add(int64(perAttempt))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// The fault this guards against: a Do begun just inside the key
// retention retried past it, when the server may have forgotten the key
// and would execute the payment again. No attempt starts once what is left
// of the retention is below its worst case (its timeout plus the wait
// before it): the intent becomes Expired and the Reconciler is asked.
func TestRetriesStopBeforeTheKeyRetentionEnds(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	const (
		retention  = time.Hour
		timeout    = 15 * time.Second
		perAttempt = 10 * time.Second
	)
	created := time.Now()
	var clock atomic.Int64
	clock.Store(created.UnixNano())
	var asked atomic.Int32
	c := newTestClient(t,
		withClock(func() time.Time { return time.Unix(0, clock.Load()) }),
		WithRetention(retention),
		WithHTTPClient(&http.Client{Timeout: timeout}),
		WithReconciler(func(context.Context, *Intent) (Reconciliation, error) {
			asked.Add(1)
			return Reconciliation{Outcome: OutcomeUnknown}, nil
		}))
	front := newSlowFront(t, srv.URL, &clock, created, retention, perAttempt)
	in := begin(t, c, "late-order", paymentRequest(t, front.URL, 100, "late-order"))

	// Thirty seconds of the retention left; every attempt answers 500
	// (it may have executed) and takes ten.
	clock.Store(created.Add(retention - 30*time.Second).UnixNano())
	srv.FailNext(10, http.StatusInternalServerError, 0)
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrKeyExpired)
	assert.Equal(t, Expired, in.State)
	assert.True(t, in.MayHaveExecuted)
	assert.Equal(t, int32(1), asked.Load(), "the Reconciler is asked")
	front.mu.Lock()
	defer front.mu.Unlock()
	assert.Equal(t, []time.Duration{30 * time.Second, 20 * time.Second}, front.left,
		"attempts start only while their worst case (15 s and the backoff) fits in what is left")
	for _, left := range front.left {
		assert.GreaterOrEqual(t, left, timeout)
	}
}

// An intent whose retention has less left than one attempt's worst case
// is not sent at all.
func TestNoFirstAttemptWithinAnAttemptOfTheRetentionsEnd(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	created := time.Now()
	var clock atomic.Int64
	clock.Store(created.UnixNano())
	c := newTestClient(t, withClock(func() time.Time { return time.Unix(0, clock.Load()) }),
		WithRetention(time.Hour), WithHTTPClient(&http.Client{Timeout: 15 * time.Second}))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "almost-expired"))
	clock.Store(created.Add(time.Hour - 10*time.Second).UnixNano())
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrKeyExpired)
	assert.Equal(t, Expired, in.State)
	assert.Contains(t, in.LastError, "within the next attempt's worst case")
	assert.Zero(t, srv.Requests())
}
