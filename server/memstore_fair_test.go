package server_test

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// One tenant flooding a bounded memory store cannot lock the others out:
// near full it is refused at its fair share, another tenant's new keys
// still run, and the flooder is told to come back when its own earliest
// record is due, not in a second.
func TestMemoryStoreFloodOfOneTenantLeavesRoomForOthers(t *testing.T) {
	t.Parallel()
	const capacity = 64
	const retention = 10 * time.Minute
	clock := newManualClock()
	store := server.NewMemoryStore(server.WithClock(clock.Now), server.WithCapacity(capacity, 0))
	t.Cleanup(func() { _ = store.Close() })
	h := mustNew(t, store, server.WithRetention(retention)).Wrap(paymentsRoute, &countingHandler{})

	start := clock.Now()
	var refused call
	flooded := 0
	for i := range capacity {
		c := post(fmt.Sprintf("a-%d", i), `{"a":1}`).withToken("tenant-a")
		rec := serve(h, c)
		if rec.Code == http.StatusServiceUnavailable {
			refused = c
			break
		}
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		flooded++
		clock.Advance(time.Second)
	}
	require.Less(t, flooded, capacity, "the flood was stopped short of the whole store")
	records, _ := store.Usage()
	require.Less(t, records, capacity)

	for i := range 4 {
		rec := serve(h, post(fmt.Sprintf("b-%d", i), `{"b":1}`).withToken("tenant-b"))
		require.Equal(t, http.StatusCreated, rec.Code, "another tenant's new key runs: %s", rec.Body)
	}

	rec := serve(h, refused)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, server.ProblemStoreUnavailable, problemType(t, rec))
	earliest := start.Add(retention) // tenant A's first record
	want := earliest.Sub(clock.Now())
	require.Positive(t, want)
	assert.Equal(t, strconv.Itoa(int(want/time.Second)), rec.Header().Get("Retry-After"),
		"the flooder is told when its earliest record is due")

	replay := serve(h, post("a-0", `{"a":1}`).withToken("tenant-a"))
	assert.True(t, replayed(replay), "the flooder's held keys still replay")

	// Its first record due and reclaimed, the flooder still holds far
	// more than its share: the next wait is its next record's.
	clock.Advance(want)
	_, err := store.Sweep(t.Context(), capacity)
	require.NoError(t, err)
	rec = serve(h, refused)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"), "its second record was made a second after the first")
	rec = serve(h, post("b-more", `{"b":1}`).withToken("tenant-b"))
	assert.Equal(t, http.StatusCreated, rec.Code, "the other tenant still has room: %s", rec.Body)
}

// The refusal says which bound it is and carries the wait.
func TestMemoryStoreFairShareRefusalIsTyped(t *testing.T) {
	t.Parallel()
	clock := newManualClock()
	store := server.NewMemoryStore(server.WithClock(clock.Now), server.WithCapacity(16, 0))
	t.Cleanup(func() { _ = store.Close() })
	scope := memScope
	var err error
	for i := 0; err == nil; i++ {
		var res *server.Reservation
		res, _, err = store.Reserve(t.Context(), scope, newBenchKey(i), fp("x"), time.Minute)
		if err == nil {
			require.NoError(t, store.Complete(t.Context(), completion(*res, "{}", 10*time.Minute)))
		}
		require.Less(t, i, 16)
	}
	var full *server.StoreFullError
	require.ErrorAs(t, err, &full)
	require.ErrorIs(t, err, server.ErrStoreFull)
	assert.True(t, full.Share)
	assert.EqualValues(t, 14, full.Records, "the last eighth of 16 is kept for others")
	assert.Equal(t, 10*time.Minute, full.RetryAfter, "its earliest record is due in the retention")
	assert.Contains(t, err.Error(), "fair share")

	other := memScope
	other.Principal = "someone else"
	res, _, err := store.Reserve(t.Context(), other, "k", fp("x"), time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)
}
