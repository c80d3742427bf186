// Package storetest is the contract every server.Store must meet. A
// store's tests call Run with a function that opens a fresh store; the
// suite speaks only through the Store interface and uses real, short
// durations for leases and retention, since each store reads its own clock.
package storetest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// Durations the suite waits on. Short enough to keep the suite fast, long
// enough that a store round trip never outlives them.
const (
	shortLease     = 100 * time.Millisecond
	shortRetention = 100 * time.Millisecond
	longLease      = time.Hour
	longRetention  = time.Hour
	pollEvery      = 10 * time.Millisecond
	waitAtMost     = 5 * time.Second
)

// Run runs the contract suite against stores that open returns. Every
// subtest opens its own store and uses its own principal, so stores backed
// by a shared database work too. Lease and retention cases wait on real
// time (about 100 ms each), polling the store.
func Run(t *testing.T, open func(t *testing.T) server.Store) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s server.Store)
	}{
		{"ReserveFresh", testReserveFresh},
		{"ReserveWhileReserved", testReserveWhileReserved},
		{"CompleteThenReplay", testCompleteThenReplay},
		{"DifferentFingerprintIsReported", testDifferentFingerprint},
		{"ScopesAreIndependent", testScopesAreIndependent},
		{"Release", testRelease},
		{"FencingOnComplete", testFencingOnComplete},
		{"LeaseTakeover", testLeaseTakeover},
		{"NoTakeoverWithDifferentFingerprint", testNoTakeoverWithDifferentFingerprint},
		{"RetentionExpiry", testRetentionExpiry},
		{"Sweep", testSweep},
		{"ReturnsCopies", testReturnsCopies},
		{"CanceledContext", testCanceledContext},
		{"ConcurrentReserve", testConcurrentReserve},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			require.NotNil(t, s, "open returned a nil store")
			tc.run(t, s)
		})
	}
}

func testReserveFresh(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	res := MustReserve(t, s, scope, key, fp, longLease)
	assert.Equal(t, scope, res.Scope)
	assert.Equal(t, key, res.Key)
	assert.Equal(t, fp, res.Fingerprint)
	assert.NotEmpty(t, res.Token)

	other := MustReserve(t, s, scope, NewKey(), fp, longLease)
	assert.NotEqual(t, res.Token, other.Token, "every reservation needs its own token")
}

func testReserveWhileReserved(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	before := time.Now()
	MustReserve(t, s, scope, key, fp, longLease)
	rec := MustFind(t, s, scope, key, fp)
	assert.Equal(t, server.StateReserved, rec.State)
	assert.Equal(t, scope, rec.Scope)
	assert.Equal(t, key, rec.Key)
	assert.Equal(t, fp, rec.Fingerprint)
	assert.Nil(t, rec.Response)
	assert.True(t, rec.LeaseExpires.After(before.Add(longLease/2)), "lease must run about an hour, got %v", rec.LeaseExpires)
}

func testCompleteThenReplay(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	res := MustReserve(t, s, scope, key, fp, longLease)
	want := SampleResponse(`{"id":"pay_1"}`)
	require.NoError(t, Complete(t, s, res, want, longRetention))

	for range 2 { // replays do not consume the record
		rec := MustFind(t, s, scope, key, fp)
		assert.Equal(t, server.StateCompleted, rec.State)
		assert.Equal(t, fp, rec.Fingerprint)
		AssertSameResponse(t, want, rec.Response)
		assert.True(t, rec.ExpiresAt.After(rec.CreatedAt.Add(longRetention/2)), "retention must run about an hour")
	}
}

func testDifferentFingerprint(t *testing.T, s server.Store) {
	scope, key := UniqueScope(t), NewKey()
	fpA, fpB := FingerprintOf(`{"a":1}`), FingerprintOf(`{"a":2}`)
	res := MustReserve(t, s, scope, key, fpA, longLease)

	rec := MustFind(t, s, scope, key, fpB)
	assert.Equal(t, fpA, rec.Fingerprint, "the record keeps the first request's fingerprint")
	assert.Equal(t, server.StateReserved, rec.State)

	require.NoError(t, Complete(t, s, res, SampleResponse("{}"), longRetention))
	rec = MustFind(t, s, scope, key, fpB)
	assert.Equal(t, fpA, rec.Fingerprint)
	assert.Equal(t, server.StateCompleted, rec.State)
}

func testScopesAreIndependent(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	MustReserve(t, s, scope, key, fp, longLease)

	otherPrincipal := scope
	otherPrincipal.Principal += "_other"
	otherMethod := scope
	otherMethod.Method = http.MethodPatch
	otherRoute := scope
	otherRoute.Route = "/v1/payouts"
	for _, other := range []server.Scope{otherPrincipal, otherMethod, otherRoute} {
		MustReserve(t, s, other, key, fp, longLease)
	}
	MustReserve(t, s, scope, NewKey(), fp, longLease)
}

func testRelease(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	res := MustReserve(t, s, scope, key, fp, longLease)
	require.NoError(t, s.Release(t.Context(), res))

	assert.ErrorIs(t, s.Release(t.Context(), res), server.ErrFenced, "a released token owns nothing")
	assert.ErrorIs(t, Complete(t, s, res, SampleResponse("{}"), longRetention), server.ErrFenced)

	// The key is free again, even for another payload.
	again := MustReserve(t, s, scope, key, FingerprintOf(`{"a":2}`), longLease)
	assert.NotEqual(t, res.Token, again.Token)

	// A completed key cannot be released.
	require.NoError(t, Complete(t, s, again, SampleResponse("{}"), longRetention))
	assert.ErrorIs(t, s.Release(t.Context(), again), server.ErrFenced)
	assert.Equal(t, server.StateCompleted, MustFind(t, s, scope, key, again.Fingerprint).State)
}

func testFencingOnComplete(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	res := MustReserve(t, s, scope, key, fp, longLease)

	forged := res
	forged.Token = "not-the-token"
	assert.ErrorIs(t, Complete(t, s, forged, SampleResponse(`"forged"`), longRetention), server.ErrFenced)
	assert.ErrorIs(t, s.Release(t.Context(), forged), server.ErrFenced)
	assert.Equal(t, server.StateReserved, MustFind(t, s, scope, key, fp).State, "a fenced call writes nothing")

	want := SampleResponse(`"first"`)
	require.NoError(t, Complete(t, s, res, want, longRetention))
	assert.ErrorIs(t, Complete(t, s, res, SampleResponse(`"second"`), longRetention), server.ErrFenced,
		"a key is completed once")
	AssertSameResponse(t, want, MustFind(t, s, scope, key, fp).Response)
}

func testLeaseTakeover(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	stale := MustReserve(t, s, scope, key, fp, shortLease)

	var fresh *server.Reservation
	Eventually(t, "an expired lease must be taken over", func() (bool, error) {
		var err error
		fresh, _, err = s.Reserve(t.Context(), scope, key, fp, longLease)
		return fresh != nil, err
	})
	assert.NotEqual(t, stale.Token, fresh.Token, "a takeover issues a new token")

	assert.ErrorIs(t, Complete(t, s, stale, SampleResponse(`"stale"`), longRetention), server.ErrFenced)
	assert.ErrorIs(t, s.Release(t.Context(), stale), server.ErrFenced)
	assert.Equal(t, server.StateReserved, MustFind(t, s, scope, key, fp).State, "the stale owner wrote nothing")

	want := SampleResponse(`"fresh"`)
	require.NoError(t, Complete(t, s, *fresh, want, longRetention))
	assert.ErrorIs(t, Complete(t, s, stale, SampleResponse(`"stale"`), longRetention), server.ErrFenced)
	AssertSameResponse(t, want, MustFind(t, s, scope, key, fp).Response)
}

func testNoTakeoverWithDifferentFingerprint(t *testing.T, s server.Store) {
	scope := UniqueScope(t)
	fpA, fpB := FingerprintOf(`{"a":1}`), FingerprintOf(`{"a":2}`)
	first, probe := NewKey(), NewKey()
	MustReserve(t, s, scope, first, fpA, shortLease)
	MustReserve(t, s, scope, probe, fpA, shortLease)

	// probe's lease was granted after first's, so once probe can be taken
	// over, first's lease has expired too.
	Eventually(t, "an expired lease must be taken over", func() (bool, error) {
		res, _, err := s.Reserve(t.Context(), scope, probe, fpA, longLease)
		return res != nil, err
	})

	rec := MustFind(t, s, scope, first, fpB)
	assert.Equal(t, fpA, rec.Fingerprint, "another payload must not take over an expired lease")
	MustReserve(t, s, scope, first, fpA, longLease)
}

func testRetentionExpiry(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	res := MustReserve(t, s, scope, key, fp, longLease)
	require.NoError(t, Complete(t, s, res, SampleResponse("{}"), shortRetention))

	// Past retention the key is new, whatever the payload.
	var fresh *server.Reservation
	Eventually(t, "a key past retention must be treated as new", func() (bool, error) {
		var err error
		fresh, _, err = s.Reserve(t.Context(), scope, key, FingerprintOf(`{"a":2}`), longLease)
		return fresh != nil, err
	})
	assert.NotEqual(t, res.Token, fresh.Token)
	assert.Equal(t, server.StateReserved, MustFind(t, s, scope, key, fresh.Fingerprint).State)
}

func testSweep(t *testing.T, s server.Store) {
	ctx := t.Context()
	_, err := s.Sweep(ctx, 0)
	assert.Error(t, err, "a non-positive limit is an error")

	scope, fp := UniqueScope(t), FingerprintOf(`{"a":1}`)
	for range 3 {
		res := MustReserve(t, s, scope, NewKey(), fp, longLease)
		require.NoError(t, Complete(t, s, res, SampleResponse("{}"), shortRetention))
	}
	keptKey, reservedKey := NewKey(), NewKey()
	kept := MustReserve(t, s, scope, keptKey, fp, longLease)
	keptResp := SampleResponse(`"kept"`)
	require.NoError(t, Complete(t, s, kept, keptResp, longRetention))
	MustReserve(t, s, scope, reservedKey, fp, shortLease)

	const limit = 2
	swept := 0
	Eventually(t, "expired records must be swept", func() (bool, error) {
		n, err := s.Sweep(ctx, limit)
		require.LessOrEqual(t, n, limit, "sweep must honour its limit")
		swept += n
		return swept >= 3, err
	})

	AssertSameResponse(t, keptResp, MustFind(t, s, scope, keptKey, fp).Response)
	rec := MustFind(t, s, scope, reservedKey, FingerprintOf("other"))
	assert.Equal(t, server.StateReserved, rec.State, "sweep must leave reservations alone")
}

func testReturnsCopies(t *testing.T, s server.Store) {
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	res := MustReserve(t, s, scope, key, fp, longLease)
	resp := SampleResponse(`{"id":"pay_1"}`)
	require.NoError(t, Complete(t, s, res, resp, longRetention))
	resp.Body[0] = 'X'
	resp.Header.Set("Content-Type", "text/plain")

	want := SampleResponse(`{"id":"pay_1"}`)
	rec := MustFind(t, s, scope, key, fp)
	AssertSameResponse(t, want, rec.Response)
	rec.Response.Body[0] = 'X'
	rec.Response.Header.Set("Location", "/elsewhere")
	AssertSameResponse(t, want, MustFind(t, s, scope, key, fp).Response)
}

func testCanceledContext(t *testing.T, s server.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	_, _, err := s.Reserve(ctx, scope, key, fp, longLease)
	require.Error(t, err)
	MustReserve(t, s, scope, key, fp, longLease) // nothing was reserved
}

func testConcurrentReserve(t *testing.T, s server.Store) {
	const workers = 32
	scope, key, fp := UniqueScope(t), NewKey(), FingerprintOf(`{"a":1}`)
	type outcome struct {
		res *server.Reservation
		rec *server.Record
		err error
	}
	start := make(chan struct{})
	results := make(chan outcome, workers)
	for range workers {
		go func() {
			<-start
			res, rec, err := s.Reserve(t.Context(), scope, key, fp, longLease)
			results <- outcome{res, rec, err}
		}()
	}
	close(start)
	winners := 0
	for range workers {
		o := <-results
		require.NoError(t, o.err)
		if o.res != nil {
			winners++
			continue
		}
		require.NotNil(t, o.rec)
		assert.Equal(t, server.StateReserved, o.rec.State)
	}
	assert.Equal(t, 1, winners, "exactly one concurrent Reserve may win")
}
