package idem

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hangGuard only stops a test from hanging when a bound under test is
// missing from the code; no test asserts against it, so a slow or loaded
// machine cannot fail a test by it.
const hangGuard = time.Minute

// storeWait is one keystore wait that had to wait (reportWait): when it
// started, the instant the code had set for it to give up, and whether
// it ran out.
type storeWait struct {
	what         string
	start, limit time.Time
	ranOut       bool
}

// storeWaits records the keystore waits of one call. The stall tests
// assert on the bounds the code set for them, never on how long a call
// took: that is the machine's speed.
type storeWaits struct {
	mu    sync.Mutex
	waits []storeWait
}

// watch returns ctx carrying w, for the call under test.
func (w *storeWaits) watch(ctx context.Context) context.Context {
	return context.WithValue(ctx, waitSeenKey{}, func(what string, start, limit time.Time, ranOut bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.waits = append(w.waits, storeWait{what, start, limit, ranOut})
	})
}

// since returns the recorded waits that started at or after from.
func (w *storeWaits) since(from time.Time) []storeWait {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []storeWait
	for _, r := range w.waits {
		if !r.start.Before(from) {
			out = append(out, r)
		}
	}
	return out
}

// requireOneGrace checks that a wait ran out and that every wait that
// ran out, or started from `from` on, had end as its limit: one grace
// for the whole call, not one per wait.
func requireOneGrace(t *testing.T, w *storeWaits, from, end time.Time) {
	t.Helper()
	all := w.since(time.Time{})
	ranOut := 0
	for _, r := range all {
		if r.ranOut || !r.start.Before(from) {
			assert.True(t, r.limit.Equal(end), "%s (ran out: %t) gave up %s after the call's one grace ended", r.what, r.ranOut, r.limit.Sub(end))
		}
		if r.ranOut {
			ranOut++
		}
	}
	require.NotZero(t, ranOut, "a keystore wait ran out")
	t.Logf("%d keystore waits had to wait, %d ran out, all bounded by the call's one grace", len(all), ranOut)
}

// firstRanOut returns the first wait that ran out.
func firstRanOut(t *testing.T, w *storeWaits) storeWait {
	t.Helper()
	for _, r := range w.since(time.Time{}) {
		if r.ranOut {
			return r
		}
	}
	require.Fail(t, "no keystore wait ran out")
	return storeWait{}
}

// requireFirstWaitBoundedBy checks, for a call with no deadline of its
// own, that the first keystore wait that ran out had the store timeout
// from its start as its limit, and that every wait after it shared one
// grace.
func requireFirstWaitBoundedBy(t *testing.T, w *storeWaits, timeout time.Duration) {
	t.Helper()
	first := firstRanOut(t, w)
	assert.Equal(t, timeout, first.limit.Sub(first.start), "%s gave up after the store timeout from its start", first.what)
	later := w.since(first.limit)
	for _, r := range later {
		assert.True(t, r.limit.Equal(later[0].limit), "%s: the waits after the first share one grace", r.what)
	}
}
