// Package storetest is the contract every server.Store must meet. A
// store's tests call Run with a function that opens a fresh store; the
// suite speaks only through the Store interface and uses real, short
// durations for leases and retention, since each store reads its own clock.
package storetest

import (
	"context"
	"crypto/rand"
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

// eventually calls try every pollEvery until it reports done, and fails
// the test if that takes longer than waitAtMost or try returns an error.
// Unlike require.Eventually it runs try on the test's goroutine, so try may
// assert and write the caller's variables.
func eventually(t *testing.T, what string, try func() (done bool, err error)) {
	t.Helper()
	deadline := time.Now().Add(waitAtMost)
	for {
		done, err := try()
		require.NoError(t, err)
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %v", what, waitAtMost)
		}
		time.Sleep(pollEvery)
	}
}

// uniqueScope returns a POST scope with a fresh principal.
func uniqueScope(t *testing.T) server.Scope {
	t.Helper()
	return server.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

func newKey() string { return rand.Text() }

// fingerprintOf stands in for server.Fingerprint: stores treat it as
// an opaque string.
func fingerprintOf(payload string) string {
	return server.Fingerprint(http.MethodPost, "/v1/payments", []byte(payload))
}

func sampleResponse(body string) server.Response {
	return server.Response{
		Status:     http.StatusCreated,
		Header:     http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/pay_1"}},
		Body:       []byte(body),
		ResourceID: "pay_1",
	}
}

// mustReserve reserves a key that must be free.
func mustReserve(t *testing.T, s server.Store, scope server.Scope, key, fp string, lease time.Duration) server.Reservation {
	t.Helper()
	res, rec, err := s.Reserve(t.Context(), scope, key, fp, lease)
	require.NoError(t, err)
	require.Nil(t, rec, "a free key must not return a record")
	require.NotNil(t, res, "a free key must be reserved")
	return *res
}

// mustFind reserves a key that must be taken and returns its record.
func mustFind(t *testing.T, s server.Store, scope server.Scope, key, fp string) server.Record {
	t.Helper()
	res, rec, err := s.Reserve(t.Context(), scope, key, fp, longLease)
	require.NoError(t, err)
	require.Nil(t, res, "a taken key must not be reserved again")
	require.NotNil(t, rec, "a taken key must return its record")
	return *rec
}

func complete(t *testing.T, s server.Store, res server.Reservation, resp server.Response, retention time.Duration) error {
	t.Helper()
	return s.Complete(t.Context(), server.Completion{Reservation: res, Response: resp, Retention: retention})
}

func assertSameResponse(t *testing.T, want server.Response, got *server.Response) {
	t.Helper()
	if !assert.NotNil(t, got, "completed record has no response") {
		return
	}
	assert.Equal(t, want.Status, got.Status)
	assert.Equal(t, want.Header, got.Header)
	assert.Equal(t, want.Body, got.Body)
	assert.Equal(t, want.ResourceID, got.ResourceID)
}

func testReserveFresh(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	res := mustReserve(t, s, scope, key, fp, longLease)
	assert.Equal(t, scope, res.Scope)
	assert.Equal(t, key, res.Key)
	assert.Equal(t, fp, res.Fingerprint)
	assert.NotEmpty(t, res.Token)

	other := mustReserve(t, s, scope, newKey(), fp, longLease)
	assert.NotEqual(t, res.Token, other.Token, "every reservation needs its own token")
}

func testReserveWhileReserved(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	before := time.Now()
	mustReserve(t, s, scope, key, fp, longLease)
	rec := mustFind(t, s, scope, key, fp)
	assert.Equal(t, server.StateReserved, rec.State)
	assert.Equal(t, scope, rec.Scope)
	assert.Equal(t, key, rec.Key)
	assert.Equal(t, fp, rec.Fingerprint)
	assert.Nil(t, rec.Response)
	assert.True(t, rec.LeaseExpires.After(before.Add(longLease/2)), "lease must run about an hour, got %v", rec.LeaseExpires)
}

func testCompleteThenReplay(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	res := mustReserve(t, s, scope, key, fp, longLease)
	want := sampleResponse(`{"id":"pay_1"}`)
	require.NoError(t, complete(t, s, res, want, longRetention))

	for range 2 { // replays do not consume the record
		rec := mustFind(t, s, scope, key, fp)
		assert.Equal(t, server.StateCompleted, rec.State)
		assert.Equal(t, fp, rec.Fingerprint)
		assertSameResponse(t, want, rec.Response)
		assert.True(t, rec.ExpiresAt.After(rec.CreatedAt.Add(longRetention/2)), "retention must run about an hour")
	}
}

func testDifferentFingerprint(t *testing.T, s server.Store) {
	scope, key := uniqueScope(t), newKey()
	fpA, fpB := fingerprintOf(`{"a":1}`), fingerprintOf(`{"a":2}`)
	res := mustReserve(t, s, scope, key, fpA, longLease)

	rec := mustFind(t, s, scope, key, fpB)
	assert.Equal(t, fpA, rec.Fingerprint, "the record keeps the first request's fingerprint")
	assert.Equal(t, server.StateReserved, rec.State)

	require.NoError(t, complete(t, s, res, sampleResponse("{}"), longRetention))
	rec = mustFind(t, s, scope, key, fpB)
	assert.Equal(t, fpA, rec.Fingerprint)
	assert.Equal(t, server.StateCompleted, rec.State)
}

func testScopesAreIndependent(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	mustReserve(t, s, scope, key, fp, longLease)

	otherPrincipal := scope
	otherPrincipal.Principal += "_other"
	otherMethod := scope
	otherMethod.Method = http.MethodPatch
	otherRoute := scope
	otherRoute.Route = "/v1/payouts"
	for _, other := range []server.Scope{otherPrincipal, otherMethod, otherRoute} {
		mustReserve(t, s, other, key, fp, longLease)
	}
	mustReserve(t, s, scope, newKey(), fp, longLease)
}

func testRelease(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	res := mustReserve(t, s, scope, key, fp, longLease)
	require.NoError(t, s.Release(t.Context(), res))

	assert.ErrorIs(t, s.Release(t.Context(), res), server.ErrFenced, "a released token owns nothing")
	assert.ErrorIs(t, complete(t, s, res, sampleResponse("{}"), longRetention), server.ErrFenced)

	// The key is free again, even for another payload.
	again := mustReserve(t, s, scope, key, fingerprintOf(`{"a":2}`), longLease)
	assert.NotEqual(t, res.Token, again.Token)

	// A completed key cannot be released.
	require.NoError(t, complete(t, s, again, sampleResponse("{}"), longRetention))
	assert.ErrorIs(t, s.Release(t.Context(), again), server.ErrFenced)
	assert.Equal(t, server.StateCompleted, mustFind(t, s, scope, key, again.Fingerprint).State)
}

func testFencingOnComplete(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	res := mustReserve(t, s, scope, key, fp, longLease)

	forged := res
	forged.Token = "not-the-token"
	assert.ErrorIs(t, complete(t, s, forged, sampleResponse(`"forged"`), longRetention), server.ErrFenced)
	assert.ErrorIs(t, s.Release(t.Context(), forged), server.ErrFenced)
	assert.Equal(t, server.StateReserved, mustFind(t, s, scope, key, fp).State, "a fenced call writes nothing")

	want := sampleResponse(`"first"`)
	require.NoError(t, complete(t, s, res, want, longRetention))
	assert.ErrorIs(t, complete(t, s, res, sampleResponse(`"second"`), longRetention), server.ErrFenced,
		"a key is completed once")
	assertSameResponse(t, want, mustFind(t, s, scope, key, fp).Response)
}

func testLeaseTakeover(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	stale := mustReserve(t, s, scope, key, fp, shortLease)

	var fresh *server.Reservation
	eventually(t, "an expired lease must be taken over", func() (bool, error) {
		var err error
		fresh, _, err = s.Reserve(t.Context(), scope, key, fp, longLease)
		return fresh != nil, err
	})
	assert.NotEqual(t, stale.Token, fresh.Token, "a takeover issues a new token")

	assert.ErrorIs(t, complete(t, s, stale, sampleResponse(`"stale"`), longRetention), server.ErrFenced)
	assert.ErrorIs(t, s.Release(t.Context(), stale), server.ErrFenced)
	assert.Equal(t, server.StateReserved, mustFind(t, s, scope, key, fp).State, "the stale owner wrote nothing")

	want := sampleResponse(`"fresh"`)
	require.NoError(t, complete(t, s, *fresh, want, longRetention))
	assert.ErrorIs(t, complete(t, s, stale, sampleResponse(`"stale"`), longRetention), server.ErrFenced)
	assertSameResponse(t, want, mustFind(t, s, scope, key, fp).Response)
}

func testNoTakeoverWithDifferentFingerprint(t *testing.T, s server.Store) {
	scope := uniqueScope(t)
	fpA, fpB := fingerprintOf(`{"a":1}`), fingerprintOf(`{"a":2}`)
	first, probe := newKey(), newKey()
	mustReserve(t, s, scope, first, fpA, shortLease)
	mustReserve(t, s, scope, probe, fpA, shortLease)

	// probe's lease was granted after first's, so once probe can be taken
	// over, first's lease has expired too.
	eventually(t, "an expired lease must be taken over", func() (bool, error) {
		res, _, err := s.Reserve(t.Context(), scope, probe, fpA, longLease)
		return res != nil, err
	})

	rec := mustFind(t, s, scope, first, fpB)
	assert.Equal(t, fpA, rec.Fingerprint, "another payload must not take over an expired lease")
	mustReserve(t, s, scope, first, fpA, longLease)
}

func testRetentionExpiry(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	res := mustReserve(t, s, scope, key, fp, longLease)
	require.NoError(t, complete(t, s, res, sampleResponse("{}"), shortRetention))

	// Past retention the key is new, whatever the payload.
	var fresh *server.Reservation
	eventually(t, "a key past retention must be treated as new", func() (bool, error) {
		var err error
		fresh, _, err = s.Reserve(t.Context(), scope, key, fingerprintOf(`{"a":2}`), longLease)
		return fresh != nil, err
	})
	assert.NotEqual(t, res.Token, fresh.Token)
	assert.Equal(t, server.StateReserved, mustFind(t, s, scope, key, fresh.Fingerprint).State)
}

func testSweep(t *testing.T, s server.Store) {
	ctx := t.Context()
	_, err := s.Sweep(ctx, 0)
	assert.Error(t, err, "a non-positive limit is an error")

	scope, fp := uniqueScope(t), fingerprintOf(`{"a":1}`)
	for range 3 {
		res := mustReserve(t, s, scope, newKey(), fp, longLease)
		require.NoError(t, complete(t, s, res, sampleResponse("{}"), shortRetention))
	}
	keptKey, reservedKey := newKey(), newKey()
	kept := mustReserve(t, s, scope, keptKey, fp, longLease)
	keptResp := sampleResponse(`"kept"`)
	require.NoError(t, complete(t, s, kept, keptResp, longRetention))
	mustReserve(t, s, scope, reservedKey, fp, shortLease)

	const limit = 2
	swept := 0
	eventually(t, "expired records must be swept", func() (bool, error) {
		n, err := s.Sweep(ctx, limit)
		require.LessOrEqual(t, n, limit, "sweep must honour its limit")
		swept += n
		return swept >= 3, err
	})

	assertSameResponse(t, keptResp, mustFind(t, s, scope, keptKey, fp).Response)
	rec := mustFind(t, s, scope, reservedKey, fingerprintOf("other"))
	assert.Equal(t, server.StateReserved, rec.State, "sweep must leave reservations alone")
}

func testReturnsCopies(t *testing.T, s server.Store) {
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	res := mustReserve(t, s, scope, key, fp, longLease)
	resp := sampleResponse(`{"id":"pay_1"}`)
	require.NoError(t, complete(t, s, res, resp, longRetention))
	resp.Body[0] = 'X'
	resp.Header.Set("Content-Type", "text/plain")

	want := sampleResponse(`{"id":"pay_1"}`)
	rec := mustFind(t, s, scope, key, fp)
	assertSameResponse(t, want, rec.Response)
	rec.Response.Body[0] = 'X'
	rec.Response.Header.Set("Location", "/elsewhere")
	assertSameResponse(t, want, mustFind(t, s, scope, key, fp).Response)
}

func testCanceledContext(t *testing.T, s server.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
	_, _, err := s.Reserve(ctx, scope, key, fp, longLease)
	require.Error(t, err)
	mustReserve(t, s, scope, key, fp, longLease) // nothing was reserved
}

func testConcurrentReserve(t *testing.T, s server.Store) {
	const workers = 32
	scope, key, fp := uniqueScope(t), newKey(), fingerprintOf(`{"a":1}`)
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
