package testserver

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reference server's memory store is bounded: a full store refuses
// new keys with 503 and Retry-After and nothing runs, while held keys
// replay; payments, which never expire, are bounded alike once their
// keys have.
func TestMemoryServerRefusesWhenFull(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s, ts := startServer(t, WithServerClock(clock.Now), WithServerRetention(time.Minute),
		WithMemoryCapacity(2, 0), WithSweepInterval(time.Hour))
	client := ts.Client()
	first := do(t, client, ts.URL, pay("tok", "k1"))
	require.Equal(t, http.StatusCreated, first.status, "body: %s", first.body)
	require.Equal(t, http.StatusCreated, do(t, client, ts.URL, pay("tok", "k2")).status)

	full := do(t, client, ts.URL, pay("tok", "k3"))
	assert.Equal(t, http.StatusServiceUnavailable, full.status)
	assert.Equal(t, ProblemStoreUnavailable, full.problemType())
	assert.NotEmpty(t, full.header.Get("Retry-After"))
	replay := do(t, client, ts.URL, pay("tok", "k1"))
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get(ReplayedHeader))
	assert.Equal(t, first.body, replay.body)

	// The keys expire and are swept; the two payments stay, and fill the
	// payments' bound.
	clock.Advance(2 * time.Minute)
	for {
		n, err := s.Store().Sweep(context.Background(), 100)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	refused := do(t, client, ts.URL, pay("tok", "k3"))
	assert.Equal(t, http.StatusServiceUnavailable, refused.status, "body: %s", refused.body)
	assert.Equal(t, ProblemStoreUnavailable, refused.problemType())
	assert.NotEmpty(t, refused.header.Get("Retry-After"))
	n, err := s.Store().CountPayments(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the refused payment was not made")
	list := do(t, client, ts.URL, call{method: http.MethodGet, path: "/v1/payments", token: "tok"})
	assert.Equal(t, http.StatusOK, list.status, "what the store holds stays readable")
}
