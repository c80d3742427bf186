package testserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request whose lease ended while it ran, and whose key a retry took
// over, writes nothing and says so: 409 naming its lost lease, not "a
// newer request owns it" (the retry may be done, or gone).
func TestFencedPaymentSaysItsLeaseEnded(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s, ts := startServer(t, WithServerClock(clock.Now), WithServerLease(3*time.Second), WithServerStoreTimeout(time.Second))
	s.Faults().SetHandlerDelay(3 * time.Second) // the stale owner waits inside its reservation

	stale := make(chan reply, 1)
	go func() { stale <- do(t, ts.Client(), ts.URL, pay("alice", "k-1")) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.Faults().Holding() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, 1, s.Faults().Holding(), "the first request holds its key")

	s.Faults().SetHandlerDelay(0)
	clock.Advance(4 * time.Second) // past the lease
	takeover := do(t, ts.Client(), ts.URL, pay("alice", "k-1"))
	require.Equal(t, http.StatusCreated, takeover.status, "the retry takes the key over")

	r := <-stale
	require.Equal(t, http.StatusConflict, r.status)
	detail := r.problem(t).Detail
	assert.Contains(t, detail, "lease on the idempotency key ended")
	assert.Contains(t, detail, "nothing was written")
	assert.NotContains(t, detail, "owns it")
	assert.Equal(t, 1, paymentCount(t, s))
}
