package idem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// boundIntents is how many intents TestLongRunningClientHoldsAFlatHeap
// drives: IDEM_TEST_BOUND_INTENTS, or 12000.
func boundIntents(t testing.TB) int {
	n := 12000
	if v := os.Getenv("IDEM_TEST_BOUND_INTENTS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "IDEM_TEST_BOUND_INTENTS")
		require.Positive(t, n, "IDEM_TEST_BOUND_INTENTS")
	}
	return n
}

// boundServer answers every POST 201, except those whose body says
// "fail": 503, which leaves the intent pending.
func boundServer(t testing.TB) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<10))
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(body), "fail") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"pay_1","status":"succeeded"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// boundClient is a Client on a memory keystore with a one-minute
// retention on clock, one attempt per Do and no scheduled purge (the test
// runs purgeNow itself, on the clock it moves).
func boundClient(t testing.TB, clock *testClock, opts ...Option) *Client {
	base := []Option{WithRetention(time.Minute), withClock(clock.Now), WithMaxAttempts(1), WithBudget(nil), WithPurgeEvery(0)}
	c, err := New(append(base, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// driveIntent begins and sends intent i (named when i is even, failing
// when fail), and moves the clock on by step. A named one whose i is a
// multiple of 10 is begun again, as a re-run of its batch would, and
// replayed; every 20th of those is begun a third time and not sent.
func driveIntent(t testing.TB, c *Client, clock *testClock, url string, i int, fail bool, step time.Duration) {
	ctx := context.Background()
	what := "ok"
	if fail {
		what = "fail"
	}
	name := ""
	if i%2 == 0 {
		name = "order/" + strconv.Itoa(i)
	}
	beginOne := func() *Intent {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(`{"n":%d,"what":%q}`, i, what)))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		in, err := c.Begin(ctx, name, req)
		require.NoError(t, err)
		return in
	}
	resp, err := c.Do(ctx, beginOne())
	if fail {
		require.Error(t, err, "a 503 leaves the intent pending")
	} else {
		require.NoError(t, err)
	}
	if resp != nil {
		_ = resp.Body.Close()
	}
	if name != "" && i%10 == 0 && !fail {
		resp, err := c.Do(ctx, beginOne())
		require.NoError(t, err)
		require.True(t, IsLocalReplay(resp), "a re-run replays")
		_ = resp.Body.Close()
		if i%200 == 0 {
			beginOne() // begun, never sent: it is settled already
		}
	}
	clock.Advance(step)
}

// storeCounts counts the records of c's keystore by state.
func storeCounts(t testing.TB, c *Client) (settled, unsettled int) {
	recs, err := c.store.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	for _, r := range recs {
		if r.State.Settled() {
			settled++
		} else {
			unsettled++
		}
	}
	return settled, unsettled
}

// A service sending intents for ever holds the intents of the last
// retention and the unsettled ones, whatever it sent before: each
// in-memory structure of the Client and of its memory keystore is
// counted after every purge, and the heap after a collection is checked
// once the retention has filled.
func TestLongRunningClientHoldsAFlatHeap(t *testing.T) {
	n := boundIntents(t)
	clock := newTestClock()
	srv := boundServer(t)
	c := boundClient(t, clock)
	const step = 10 * time.Millisecond // 100 intents a second, on the clock
	const purgeEvery = 1000            // intents between two purges: 10 s
	perRetention := int(time.Minute / step)
	failed := 0
	var heapFilled uint64
	for i := range n {
		fail := i%500 == 0
		if fail {
			failed++
		}
		driveIntent(t, c, clock, srv.URL+"/v1/payments", i, fail, step)
		if (i+1)%purgeEvery != 0 {
			continue
		}
		_, err := c.purgeNow()
		require.NoError(t, err)
		settled, unsettled := storeCounts(t, c)
		// Settled records younger than the retention, plus those since
		// the last purge; never the ones before.
		require.LessOrEqual(t, settled, perRetention+purgeEvery, "settled records after %d intents", i+1)
		require.Equal(t, failed, unsettled, "every pending intent stays, after %d intents", i+1)
		// Only the pending intents keep their secrets in the Client.
		require.Equal(t, failed, c.local.size(), "local entries after %d intents", i+1)
		require.Zero(t, c.locks.size(), "key locks after %d intents", i+1)
		if i+1 == perRetention+2*purgeEvery {
			heapFilled = liveHeap()
		}
	}
	if heapFilled == 0 {
		t.Logf("%d intents: too few to fill the retention; heap not checked", n)
		return
	}
	heapEnd := liveHeap()
	t.Logf("%d intents: live heap %d KiB once the retention filled, %d KiB at the end", n, heapFilled>>10, heapEnd>>10)
	// Generous: the records of one purge interval, and the collector's
	// slack. What leaked per intent would grow it by n times that.
	assert.Less(t, heapEnd, heapFilled+heapFilled/2+4<<20, "the heap grew with the intents sent")
}

// size is the number of intents with an entry.
func (s *localState) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// size is the number of keys locked or waited for.
func (l *keyLocks) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.locks)
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// The scheduled purge removes settled intents past their retention, and
// keeps pending ones and those whose outcome is unknown; Close stops it.
func TestScheduledPurgeKeepsUnknownOutcomes(t *testing.T) {
	t.Parallel()
	clock := newTestClock()
	srv := boundServer(t)
	c := boundClient(t, clock, WithPurgeEvery(5*time.Millisecond))
	ctx := context.Background()
	driveIntent(t, c, clock, srv.URL, 0, false, 0)
	driveIntent(t, c, clock, srv.URL, 1, true, 0) // pending
	expired := begin(t, c, "expired", paymentRequest(t, srv.URL, 1, "expired"))
	clock.Advance(2 * time.Minute)
	_, err := c.Do(ctx, expired) // past the retention: Expired, outcome unknown
	require.Error(t, err)
	require.Eventually(t, func() bool {
		settled, _ := storeCounts(t, c)
		return settled == 1 // only the Expired one is left of the settled
	}, 5*time.Second, 5*time.Millisecond, "the scheduled purge deletes the succeeded intent")
	got, err := c.store.Get(ctx, expired.Key)
	require.NoError(t, err)
	assert.Equal(t, keystore.Expired, got.State)
	_, unsettled := storeCounts(t, c)
	assert.Equal(t, 1, unsettled, "the pending intent stays")
	require.NoError(t, c.Close())
	select {
	case <-c.purger.done:
	default:
		t.Fatal("Close returned with the purge loop running")
	}
}

// The memory keystore New makes is purged by default; another store only
// when asked; WithPurgeEvery refuses a negative interval.
func TestPurgeEveryDefaults(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	require.NotNil(t, c.purger, "a memory keystore is purged by default")
	short := newTestClient(t, WithRetention(time.Minute))
	require.NotNil(t, short.purger)
	assert.Equal(t, DefaultMemoryPurgeEvery, short.cfg.purgeInterval(), "a short retention keeps the interval")
	assert.Equal(t, DefaultMemoryPurgeEvery, c.cfg.purgeInterval())
	off := newTestClient(t, WithPurgeEvery(0))
	assert.Nil(t, off.purger)
	bolt := newTestClient(t, WithBoltStore(t.TempDir()+"/i.db", nil))
	assert.Nil(t, bolt.purger, "a file keystore is purged only when asked")
	_, err := New(WithPurgeEvery(-time.Second))
	require.ErrorContains(t, err, "WithPurgeEvery")
}
