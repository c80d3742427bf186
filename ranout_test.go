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

// ranOutWait is one keystore wait that ran out: when it started and the
// instant the code had set for it to give up.
type ranOutWait struct {
	what         string
	start, limit time.Time
}

// ranOutWaits records the keystore waits of one call that ran out
// (reportRanOut). The stall tests assert on these bounds, which the code
// set, never on how long a call took: that is the machine's speed.
type ranOutWaits struct {
	mu    sync.Mutex
	waits []ranOutWait
}

// watch returns ctx carrying w, for the call under test.
func (w *ranOutWaits) watch(ctx context.Context) context.Context {
	return context.WithValue(ctx, ranOutKey{}, func(what string, start, limit time.Time) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.waits = append(w.waits, ranOutWait{what, start, limit})
	})
}

func (w *ranOutWaits) all() []ranOutWait {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]ranOutWait(nil), w.waits...)
}

// requireOneGraceFrom checks at least one wait ran out and that every
// wait that ran out had the same limit, end: one grace for the whole
// call, not one per wait.
func requireOneGraceFrom(t *testing.T, w *ranOutWaits, end time.Time) {
	t.Helper()
	waits := w.all()
	require.NotEmpty(t, waits, "a keystore wait ran out")
	for _, r := range waits {
		assert.True(t, r.limit.Equal(end), "%s gave up %s after the call's one grace ended", r.what, r.limit.Sub(end))
	}
	t.Logf("%d keystore waits ran out, all at the end of the call's one grace", len(waits))
}

// requireSharedGrace checks at least one wait ran out and that every wait
// that ran out had the same limit, returning it.
func requireSharedGrace(t *testing.T, w *ranOutWaits) time.Time {
	t.Helper()
	waits := w.all()
	require.NotEmpty(t, waits, "a keystore wait ran out")
	requireOneGraceFrom(t, w, waits[0].limit)
	return waits[0].limit
}

// requireFirstWaitBoundedBy checks, for a call with no deadline of its
// own, that the first keystore wait that ran out had the store timeout
// from its start as its limit, and that any later ones shared one grace.
func requireFirstWaitBoundedBy(t *testing.T, w *ranOutWaits, timeout time.Duration) {
	t.Helper()
	waits := w.all()
	require.NotEmpty(t, waits, "a keystore wait ran out")
	first := waits[0]
	assert.Equal(t, timeout, first.limit.Sub(first.start), "%s gave up after the store timeout from its start", first.what)
	for _, r := range waits[1:] {
		assert.True(t, r.limit.Equal(waits[1].limit), "%s: the waits after the first share one grace", r.what)
	}
}
