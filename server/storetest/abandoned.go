package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// shortGrace is the reservation grace of the stores that must sweep an
// abandoned reservation while the test waits.
const shortGrace = 100 * time.Millisecond

// RunReservationGrace runs the cases of Sweep and abandoned reservations:
// open returns a fresh store that keeps a reservation for grace after its
// lease ended. The subtests run in parallel, so open must be safe to call
// concurrently. Each waits on real time (a few hundred ms), polling.
func RunReservationGrace(t *testing.T, open func(t *testing.T, grace time.Duration) server.Store) {
	t.Helper()
	for _, tc := range []struct {
		name  string
		grace time.Duration
		run   func(t *testing.T, s server.Store)
	}{
		{"AbandonedReservationsAreSwept", shortGrace, testAbandonedReservationsAreSwept},
		{"ExpiredLeaseWithinGraceIsKept", longLease, testExpiredLeaseWithinGraceIsKept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t, tc.grace)
			require.NotNil(t, s, "open returned a nil store")
			tc.run(t, s)
		})
	}
}

// Reservations whose lease ended more than the grace ago are swept along
// with expired completed records, in batches of the limit; a reservation
// within its lease and a completed record within its retention are not.
func testAbandonedReservationsAreSwept(t *testing.T, s server.Store) {
	ctx := t.Context()
	scope := UniqueScope(t)
	fpA, fpB := FingerprintOf(`{"a":1}`), FingerprintOf(`{"a":2}`)

	abandoned := []string{NewKey(), NewKey(), NewKey()}
	for _, key := range abandoned {
		MustReserve(t, s, scope, key, fpA, shortLease)
	}
	for range 2 {
		res := MustReserve(t, s, scope, NewKey(), fpA, longLease)
		require.NoError(t, Complete(t, s, res, SampleResponse("{}"), shortRetention))
	}
	liveKey, keptKey := NewKey(), NewKey()
	MustReserve(t, s, scope, liveKey, fpA, longLease)
	kept := MustReserve(t, s, scope, keptKey, fpA, longLease)
	keptResp := SampleResponse(`"kept"`)
	require.NoError(t, Complete(t, s, kept, keptResp, longRetention))

	const limit, due = 2, 5
	swept := 0
	Eventually(t, "abandoned reservations and expired records must be swept", func() (bool, error) {
		n, err := s.Sweep(ctx, limit)
		require.LessOrEqual(t, n, limit, "sweep must honour its limit")
		swept += n
		return swept >= due, err
	})
	n, err := s.Sweep(ctx, limit)
	require.NoError(t, err)
	assert.Zero(t, n, "nothing else is due")
	assert.Equal(t, due, swept, "every due record is counted once")

	for _, key := range abandoned {
		MustReserve(t, s, scope, key, fpB, longLease) // free for any payload
	}
	rec := MustFind(t, s, scope, liveKey, fpB)
	assert.Equal(t, server.StateReserved, rec.State, "a reservation within its lease is never swept")
	assert.Equal(t, fpA, rec.Fingerprint)
	AssertSameResponse(t, keptResp, MustFind(t, s, scope, keptKey, fpA).Response)
}

// A reservation whose lease ended less than the grace ago survives Sweep,
// so a retry with the same payload can still take it over.
func testExpiredLeaseWithinGraceIsKept(t *testing.T, s server.Store) {
	ctx := t.Context()
	scope := UniqueScope(t)
	fpA, fpB := FingerprintOf(`{"a":1}`), FingerprintOf(`{"a":2}`)
	key, probe := NewKey(), NewKey()
	stale := MustReserve(t, s, scope, key, fpA, shortLease)
	MustReserve(t, s, scope, probe, fpA, shortLease)

	// probe's lease was granted after key's, so once probe can be taken
	// over, key's lease has ended too.
	Eventually(t, "an expired lease must be taken over", func() (bool, error) {
		res, _, err := s.Reserve(ctx, scope, probe, fpA, longLease)
		return res != nil, err
	})
	n, err := s.Sweep(ctx, 100)
	require.NoError(t, err)
	assert.Zero(t, n, "a lease that ended within the grace is not abandoned yet")

	rec := MustFind(t, s, scope, key, fpB)
	assert.Equal(t, server.StateReserved, rec.State, "another payload still meets the reservation")
	assert.Equal(t, fpA, rec.Fingerprint)
	fresh := MustReserve(t, s, scope, key, fpA, longLease)
	assert.NotEqual(t, stale.Token, fresh.Token, "the same payload takes the reservation over")
}
