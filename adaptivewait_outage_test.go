package idem

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// switchServer answers 503 while down, else 201; it counts what it got.
type switchServer struct {
	down     atomic.Bool
	requests atomic.Int64
}

func (s *switchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if s.down.Load() {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"title":"Service unavailable","status":503}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"id":"pay_1","status":"succeeded"}`))
}

// One Client shared by a herd, through an outage and back: during the
// outage every call ends, refused by the budget or out of attempts, and
// the server sees the herd's first attempts plus at most the bucket and
// the floor; once the server is back, the same Client's calls succeed.
func TestAdaptiveBudgetThroughAnOutageAndBack(t *testing.T) {
	t.Parallel()
	srv := &switchServer{}
	srv.down.Store(true)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	const capacity, floor, callers = 10, 5, 40
	budget := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: capacity, MinPerSecond: floor, Patience: 50 * time.Millisecond})
	c := newTestClient(t, WithBudget(budget), WithHTTPClient(hs.Client()))

	call := func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		in := begin(t, c, "", paymentRequest(t, hs.URL, 100+i, "outage"))
		resp, err := c.Do(ctx, in)
		if err == nil {
			require.Equal(t, http.StatusCreated, resp.StatusCode)
		}
		return err
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call(i)
		}()
	}
	wg.Wait()
	outage := time.Since(start)
	for i, err := range errs {
		require.Error(t, err, "caller %d: nothing was accepted", i)
		assert.True(t, errors.Is(err, ErrBudgetExhausted) || errors.Is(err, ErrRetriesExhausted), "caller %d: %v", i, err)
	}
	// The first attempts, the bucket once, and the floor over the run.
	limit := int64(callers + capacity + floor*int(outage/time.Second+1))
	assert.LessOrEqual(t, srv.requests.Load(), limit, "attempts during the outage (%s)", outage)
	assert.True(t, budget.State(time.Now()).Down)

	srv.down.Store(false)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = call(callers + i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "caller %d after the outage", i)
	}
	assert.False(t, budget.State(time.Now()).Down)
	assert.Zero(t, budget.State(time.Now()).Waiting)
}
