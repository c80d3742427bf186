package testserver

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCrashAfterCommitRunsTheHookAfterTheEffect shows the crash comes
// after the commit: when the hook runs, the payment already exists, and
// the client never hears an answer. A retry replays the committed one.
func TestCrashAfterCommitRunsTheHookAfterTheEffect(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	var crashes, paymentsAtCrash atomic.Int64
	s.Faults().CrashAfterCommit(1, func() {
		crashes.Add(1)
		paymentsAtCrash.Store(int64(paymentCount(t, s)))
	})
	assert.Equal(t, 1, s.Faults().Snapshot().CrashAfterCommit)

	_, err := freshClient().Do(pay("alice", "k").request(t, ts.URL))
	require.Error(t, err, "no answer is written after the crash")
	assert.Equal(t, int64(1), crashes.Load())
	assert.Equal(t, int64(1), paymentsAtCrash.Load(), "the effect was committed before the crash")

	r := do(t, freshClient(), ts.URL, pay("alice", "k"))
	assert.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	assert.Equal(t, 1, paymentCount(t, s))
	assert.Equal(t, int64(1), crashes.Load(), "the fault is one-shot")
	assert.Zero(t, s.Faults().Snapshot().CrashAfterCommit)
}

// TestCrashAfterCommitWithoutHookDropsTheConnection: the library never
// ends the process itself.
func TestCrashAfterCommitWithoutHookDropsTheConnection(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t)
	s.Faults().CrashAfterCommit(1, nil)

	_, err := freshClient().Do(pay("alice", "k").request(t, ts.URL))
	require.Error(t, err)
	assert.Equal(t, 1, paymentCount(t, s))
}

func TestClearDisarmsCrashAfterCommit(t *testing.T) {
	t.Parallel()
	var f Faults
	f.CrashAfterCommit(-1, nil)
	assert.Equal(t, FaultState{}, f.Snapshot())
	f.CrashAfterCommit(2, func() {})
	f.Clear()
	assert.Equal(t, FaultState{}, f.Snapshot())
	kind, _, _ := f.take()
	assert.Equal(t, faultNone, kind)
}
