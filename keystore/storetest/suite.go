// Package storetest is the contract every keystore.Store must meet, as a
// test suite an implementation runs against itself:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) keystore.Store { return keystore.NewMemory() })
//	}
//
// The suite speaks only through the keystore.Store interface, and through
// keystore.Deferrer when the store offers it.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// Run runs the contract. open must return a new, empty store each time it
// is called; subtests run in parallel, each with its own store, and close
// it when they end.
func Run(t *testing.T, open func(t *testing.T) keystore.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s keystore.Store)
	}{
		{"CreateThenGet", testCreateThenGet},
		{"Missing", testMissing},
		{"DuplicateKey", testDuplicateKey},
		{"SameNameReturnsExisting", testSameNameReturnsExisting},
		{"Update", testUpdate},
		{"UpdateCannotRename", testUpdateCannotRename},
		{"UpdateNeverUnsettles", testUpdateNeverUnsettles},
		{"OperationGoneMaySucceed", testOperationGoneMaySucceed},
		{"ListFilters", testListFilters},
		{"Purge", testPurge},
		{"PurgeKeepsTombstones", testPurgeKeepsTombstones},
		{"NoAliasing", testNoAliasing},
		{"ConcurrentCreateSameName", testConcurrentCreateSameName},
		{"ConcurrentWrites", testConcurrentWrites},
		{"InvalidInput", testInvalidInput},
		{"CanceledContext", testCanceledContext},
		{"Closed", testClosed},
		{"ErrorsHideKeys", testErrorsHideKeys},
		{"DeferredReadsBack", testDeferredReadsBack},
		{"Namesakes", testNamesakes},
		{"Rebind", testRebind},
		{"Runs", testRuns},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			require.NotNil(t, s, "open returned a nil store")
			t.Cleanup(func() { _ = s.Close() }) // ErrClosed when the test closed it
			tc.run(t, s)
		})
	}
}

// base is the clock of the suite: whole microseconds in UTC, so every store
// (Postgres keeps microseconds) can hold it exactly.
var base = time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC)

// at returns base plus n minutes.
func at(n int) time.Time { return base.Add(time.Duration(n) * time.Minute) }

// record returns a fully populated record, so that a round trip through a
// store exercises every field.
func record(key, name string, state keystore.State, created time.Time) *keystore.Record {
	return &keystore.Record{
		Key:         key,
		Name:        name,
		Method:      http.MethodPost,
		URL:         "https://api.example.com/v1/payments",
		Header:      http.Header{"Content-Type": {"application/json"}, "X-Trace": {"a", "b"}},
		Body:        []byte(`{"amount":1000,"currency":"EUR"}`),
		Fingerprint: "sha256:" + key,
		State:       state,
		CreatedAt:   created,
		UpdatedAt:   created,
	}
}

// finish moves r to state with a stored response at updated, after an
// attempt that may have executed and a reconciliation that did not know.
func finish(r *keystore.Record, state keystore.State, updated time.Time) *keystore.Record {
	r.State = state
	r.UpdatedAt = updated
	r.Attempts = 2
	r.Response = &keystore.Response{
		Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/pay_1"}},
		Body:   []byte{0x7b, 0x7d, 0x00, 0xff}, // not text: bodies are bytes
	}
	r.LastError = "timeout after 2s"
	r.MayHaveExecuted = true
	r.Reconciliations = []keystore.Reconciliation{{
		Outcome: keystore.ReconciledUnknown, Source: "reconciler", By: "reconciler",
		At: updated.Add(-time.Second), Note: "no payment found yet",
	}}
	return r
}

// assertSame checks that got is want as a store gives it back: instants
// equal whatever the zone, and empty headers, bodies or audit trails equal
// to absent ones.
func assertSame(t *testing.T, want, got *keystore.Record, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, got, msgAndArgs...)
	assert.Equal(t, normalize(want), normalize(got), msgAndArgs...)
}

func normalize(r *keystore.Record) *keystore.Record {
	c := r.Clone()
	c.CreatedAt = c.CreatedAt.UTC()
	c.UpdatedAt = c.UpdatedAt.UTC()
	c.AcceptedAt = c.AcceptedAt.UTC()
	c.Purged = c.Purged.UTC()
	for i := range c.Reconciliations {
		c.Reconciliations[i].At = c.Reconciliations[i].At.UTC()
	}
	if len(c.Reconciliations) == 0 {
		c.Reconciliations = nil
	}
	if len(c.Header) == 0 {
		c.Header = nil
	}
	if len(c.Body) == 0 {
		c.Body = nil
	}
	if c.Response != nil {
		if len(c.Response.Header) == 0 {
			c.Response.Header = nil
		}
		if len(c.Response.Body) == 0 {
			c.Response.Body = nil
		}
	}
	return c
}

// mustCreate creates r and requires that it was stored.
func mustCreate(t *testing.T, s keystore.Store, r *keystore.Record) {
	t.Helper()
	_, created, err := s.Create(context.Background(), r)
	require.NoError(t, err)
	require.True(t, created, "record %s was not created", r.Key)
}

// keys returns the keys of recs in order.
func keys(recs []*keystore.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Key)
	}
	return out
}

func testCreateThenGet(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	r := record("k1", "order-1", keystore.Pending, at(0))
	existing, created, err := s.Create(ctx, r)
	require.NoError(t, err)
	assert.True(t, created)
	assertSame(t, r, existing, "Create returns the stored record")

	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assertSame(t, r, got)

	got, err = s.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assertSame(t, r, got)

	unnamed := record("k2", "", keystore.Pending, at(1))
	mustCreate(t, s, unnamed)
	got, err = s.Get(ctx, "k2")
	require.NoError(t, err)
	assertSame(t, unnamed, got)
}

func testMissing(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	mustCreate(t, s, record("k1", "n1", keystore.Pending, at(0)))
	_, err := s.Get(ctx, "nope")
	assert.ErrorIs(t, err, keystore.ErrNotFound)
	_, err = s.GetByName(ctx, "nope")
	assert.ErrorIs(t, err, keystore.ErrNotFound)
	_, err = s.GetByName(ctx, "")
	assert.ErrorIs(t, err, keystore.ErrNotFound, "the empty name names no record")
	err = s.Update(ctx, record("nope", "", keystore.Failed, at(1)))
	assert.ErrorIs(t, err, keystore.ErrNotFound)
}

func testDuplicateKey(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	first := record("k1", "", keystore.Pending, at(0))
	mustCreate(t, s, first)

	_, created, err := s.Create(ctx, record("k1", "", keystore.Pending, at(1)))
	assert.ErrorIs(t, err, keystore.ErrDuplicateKey)
	assert.False(t, created)

	_, created, err = s.Create(ctx, record("k1", "other-name", keystore.Pending, at(1)))
	assert.ErrorIs(t, err, keystore.ErrDuplicateKey)
	assert.False(t, created)
	_, err = s.GetByName(ctx, "other-name")
	assert.ErrorIs(t, err, keystore.ErrNotFound, "a rejected create must not claim its name")

	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assertSame(t, first, got, "a rejected create must not change the stored record")
}

func testSameNameReturnsExisting(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	first := record("k1", "order-1", keystore.Pending, at(0))
	mustCreate(t, s, first)

	existing, created, err := s.Create(ctx, record("k2", "order-1", keystore.Pending, at(1)))
	require.NoError(t, err)
	assert.False(t, created)
	assertSame(t, first, existing)
	_, err = s.Get(ctx, "k2")
	assert.ErrorIs(t, err, keystore.ErrNotFound, "nothing is written when the name exists")

	// A retried create (same key, same name) also returns the record.
	existing, created, err = s.Create(ctx, record("k1", "order-1", keystore.Pending, at(2)))
	require.NoError(t, err)
	assert.False(t, created)
	assertSame(t, first, existing)

	// After an update the name returns the record as it is now.
	done := finish(first.Clone(), keystore.Succeeded, at(3))
	require.NoError(t, s.Update(ctx, done))
	existing, created, err = s.Create(ctx, record("k3", "order-1", keystore.Pending, at(4)))
	require.NoError(t, err)
	assert.False(t, created)
	assertSame(t, done, existing)
}

func testUpdate(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	r := record("k1", "order-1", keystore.Pending, at(0))
	mustCreate(t, s, r)

	r.Attempts = 1
	r.UpdatedAt = at(1)
	r.LastError = "connection reset"
	require.NoError(t, s.Update(ctx, r))
	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assertSame(t, r, got)

	accepted := finish(r.Clone(), keystore.Accepted, at(2))
	accepted.Operation = "/v1/operations/op_1"
	require.NoError(t, s.Update(ctx, accepted))
	got, err = s.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assertSame(t, accepted, got)
}

func testUpdateCannotRename(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	r := record("k1", "order-1", keystore.Pending, at(0))
	mustCreate(t, s, r)
	mustCreate(t, s, record("k2", "", keystore.Pending, at(1)))

	renamed := r.Clone()
	renamed.Name = "order-2"
	assert.Error(t, s.Update(ctx, renamed))
	unnamed := r.Clone()
	unnamed.Name = ""
	assert.Error(t, s.Update(ctx, unnamed))
	named := record("k2", "order-3", keystore.Failed, at(2))
	assert.Error(t, s.Update(ctx, named))

	got, err := s.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assertSame(t, r, got, "a refused update changes nothing")
	for _, name := range []string{"order-2", "order-3"} {
		_, err = s.GetByName(ctx, name)
		assert.ErrorIs(t, err, keystore.ErrNotFound, name)
	}
}

// testUpdateNeverUnsettles checks the downgrade rule: a worker that
// gives up late must not write Pending over the answer another stored.
func testUpdateNeverUnsettles(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	// Keys that no state name or message word contains, so
	// assertHidesKey can look for them.
	ok := finish(record("k-7Q2X", "n-ok", keystore.Pending, at(0)), keystore.Succeeded, at(1))
	failed := finish(record("k-9ZRW", "", keystore.Pending, at(0)), keystore.Failed, at(1))
	expired := record("k-4VJY", "", keystore.Expired, at(0))
	for _, r := range []*keystore.Record{ok, failed, expired} {
		mustCreate(t, s, r)
	}
	refused := []struct {
		from *keystore.Record
		to   keystore.State
	}{
		{ok, keystore.Pending}, {ok, keystore.Accepted}, {ok, keystore.Failed}, {ok, keystore.Expired},
		{failed, keystore.Pending}, {failed, keystore.Succeeded}, {failed, keystore.Expired},
		{expired, keystore.Pending}, {expired, keystore.Accepted},
	}
	for _, tc := range refused {
		late := record(tc.from.Key, tc.from.Name, tc.to, at(0))
		late.UpdatedAt, late.Attempts = at(2), 7
		err := s.Update(ctx, late)
		require.ErrorIs(t, err, keystore.ErrSettled, "%s -> %s", tc.from.State, tc.to)
		assertHidesKey(t, err, tc.from.Key, "settled")
		got, err := s.Get(ctx, tc.from.Key)
		require.NoError(t, err)
		assertSame(t, tc.from, got, "a refused update writes nothing (%s -> %s)", tc.from.State, tc.to)
	}

	// Rewriting a settled record in its own state is allowed.
	again := ok.Clone()
	again.Reconciliations = nil
	again.UpdatedAt = at(3)
	require.NoError(t, s.Update(ctx, again))
	got, err := s.GetByName(ctx, "n-ok")
	require.NoError(t, err)
	assertSame(t, again, got)

	// An expired record may be reconciled; then it is settled for good.
	reconciled := finish(expired.Clone(), keystore.Failed, at(4))
	require.NoError(t, s.Update(ctx, reconciled))
	got, err = s.Get(ctx, expired.Key)
	require.NoError(t, err)
	assertSame(t, reconciled, got)
	assert.ErrorIs(t, s.Update(ctx, finish(expired.Clone(), keystore.Succeeded, at(5))), keystore.ErrSettled)
}

func testListFilters(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	all, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Empty(t, all)

	// Created out of order, so that "oldest first" is the store's doing.
	mustCreate(t, s, record("c", "", keystore.Pending, at(2)))
	mustCreate(t, s, finish(record("a", "", keystore.Pending, at(0)), keystore.Succeeded, at(5)))
	mustCreate(t, s, record("e", "", keystore.Pending, at(4)))
	mustCreate(t, s, finish(record("b", "", keystore.Pending, at(1)), keystore.Failed, at(5)))
	mustCreate(t, s, finish(record("d", "", keystore.Pending, at(3)), keystore.Expired, at(5)))

	cases := []struct {
		name string
		f    keystore.Filter
		want []string
	}{
		{"all", keystore.Filter{}, []string{"a", "b", "c", "d", "e"}},
		{"pending", keystore.Filter{States: []keystore.State{keystore.Pending}}, []string{"c", "e"}},
		{"two states", keystore.Filter{States: []keystore.State{keystore.Failed, keystore.Succeeded}}, []string{"a", "b"}},
		{"no match", keystore.Filter{States: []keystore.State{keystore.Accepted}}, []string{}},
		{"created before", keystore.Filter{CreatedBefore: at(2)}, []string{"a", "b"}},
		{"both", keystore.Filter{States: []keystore.State{keystore.Pending}, CreatedBefore: at(4)}, []string{"c"}},
	}
	for _, tc := range cases {
		got, err := s.List(ctx, tc.f)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, keys(got), tc.name)
	}

	got, err := s.List(ctx, keystore.Filter{States: []keystore.State{keystore.Pending}})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assertSame(t, record("c", "", keystore.Pending, at(2)), got[0], "List returns whole records")
}

func testPurge(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	// Every record is past the retention cutoff: nothing is kept.
	req := keystore.PurgeRequest{OlderThan: at(5), KeepNamesAfter: at(100)}
	res, err := s.Purge(ctx, req)
	require.NoError(t, err)
	assert.Zero(t, res)

	mustCreate(t, s, finish(record("old-ok", "n-old-ok", keystore.Pending, at(0)), keystore.Succeeded, at(1)))
	mustCreate(t, s, finish(record("old-fail", "", keystore.Pending, at(0)), keystore.Failed, at(1)))
	mustCreate(t, s, finish(record("old-202", "", keystore.Pending, at(0)), keystore.Accepted, at(1)))
	mustCreate(t, s, finish(record("old-exp", "", keystore.Pending, at(0)), keystore.Expired, at(1)))
	mustCreate(t, s, record("old-pending", "n-old-pending", keystore.Pending, at(0)))
	mustCreate(t, s, finish(record("new-ok", "", keystore.Pending, at(0)), keystore.Succeeded, at(10)))
	mustCreate(t, s, finish(record("edge", "", keystore.Pending, at(0)), keystore.Succeeded, at(5)))

	res, err = s.Purge(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 2}, res)

	left, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"old-pending", "old-202", "old-exp", "new-ok", "edge"}, keys(left),
		"pending, accepted and expired records (outcome unknown), records updated at or after the cutoff stay")

	unknown := req
	unknown.IncludeUnknown = true
	res, err = s.Purge(ctx, unknown)
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 1}, res, "IncludeUnknown purges the expired record")
	_, err = s.Get(ctx, "old-exp")
	assert.ErrorIs(t, err, keystore.ErrNotFound)

	_, err = s.GetByName(ctx, "n-old-ok")
	assert.ErrorIs(t, err, keystore.ErrNotFound, "a purged record's name is gone")
	_, err = s.GetByName(ctx, "n-old-pending")
	assert.NoError(t, err)
	_, created, err := s.Create(ctx, record("reborn", "n-old-ok", keystore.Pending, at(20)))
	require.NoError(t, err)
	assert.True(t, created, "a purged name can be used again")

	res, err = s.Purge(ctx, req)
	require.NoError(t, err)
	assert.Zero(t, res, "a second purge finds nothing")
}

// testPurgeKeepsTombstones: a purge must not forget a name whose key the
// server still remembers, or a re-run would begin it again under a new
// key and pay twice.
func testPurgeKeepsTombstones(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	young := finish(record("young", "n-young", keystore.Pending, at(10)), keystore.Succeeded, at(11))
	young.Host = "pay.internal.example"
	young.AcceptedAt = at(10).Add(time.Second)
	mustCreate(t, s, young)
	mustCreate(t, s, finish(record("young-unnamed", "", keystore.Pending, at(10)), keystore.Failed, at(11)))
	mustCreate(t, s, finish(record("old", "n-old", keystore.Pending, at(0)), keystore.Succeeded, at(1)))
	mustCreate(t, s, record("pending", "n-pending", keystore.Pending, at(10)))

	req := keystore.PurgeRequest{OlderThan: at(20), KeepNamesAfter: at(5)}
	res, err := s.Purge(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 2, Tombstoned: 1}, res)

	tomb, err := s.GetByName(ctx, "n-young")
	require.NoError(t, err)
	require.False(t, tomb.Purged.IsZero(), "a tombstone says when it was purged")
	assertSame(t, young.Tombstone(tomb.Purged), tomb)
	assert.Nil(t, tomb.Body)
	assert.Nil(t, tomb.Header)
	require.NotNil(t, tomb.Response)
	assert.Equal(t, 201, tomb.Response.Status)
	assert.Nil(t, tomb.Response.Body)
	assert.Equal(t, young.Response.Header, tomb.Response.Header)
	assert.Equal(t, keystore.PurgeKeep, req.Action(tomb))

	again, created, err := s.Create(ctx, record("young-again", "n-young", keystore.Pending, at(30)))
	require.NoError(t, err)
	assert.False(t, created, "the name is still bound to its key")
	assertSame(t, tomb, again)

	res, err = s.Purge(ctx, req)
	require.NoError(t, err)
	assert.Zero(t, res, "a tombstone stays until its retention cutoff passes")

	// Past the retention cutoff the tombstone goes, and its name is free.
	res, err = s.Purge(ctx, keystore.PurgeRequest{OlderThan: at(20), KeepNamesAfter: at(10)})
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 1}, res)
	_, err = s.GetByName(ctx, "n-young")
	assert.ErrorIs(t, err, keystore.ErrNotFound)
	_, err = s.Get(ctx, "pending")
	assert.NoError(t, err, "pending records are never purged")
	mustCreate(t, s, record("young-again", "n-young", keystore.Pending, at(30)))

	// The zero KeepNamesAfter keeps every name.
	mustCreate(t, s, finish(record("ancient", "n-ancient", keystore.Pending, at(-1000)), keystore.Expired, at(-999)))
	res, err = s.Purge(ctx, keystore.PurgeRequest{OlderThan: at(20)})
	require.NoError(t, err)
	assert.Zero(t, res, "an expired record's outcome is unknown: kept")
	res, err = s.Purge(ctx, keystore.PurgeRequest{OlderThan: at(20), IncludeUnknown: true})
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Tombstoned: 1}, res)
}

func testNoAliasing(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	r := finish(record("k1", "order-1", keystore.Pending, at(0)), keystore.Succeeded, at(1))
	want := r.Clone()
	existing, _, err := s.Create(ctx, r)
	require.NoError(t, err)

	scribble := func(x *keystore.Record) {
		x.Header.Set("Content-Type", "scribbled")
		x.Body[0] = 'X'
		x.Response.Header.Set("Location", "scribbled")
		x.Response.Body[0] = 'X'
		x.Reconciliations[0].Note = "scribbled"
		x.Attempts = 99
	}
	scribble(r)
	scribble(existing)
	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assertSame(t, want, got, "the caller's record and the returned one are copies")

	scribble(got)
	byName, err := s.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assertSame(t, want, byName)

	scribble(byName)
	again, _, err := s.Create(ctx, record("k2", "order-1", keystore.Pending, at(2)))
	require.NoError(t, err)
	assertSame(t, want, again)

	scribble(again)
	list, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, list, 1)
	scribble(list[0])

	u := want.Clone()
	require.NoError(t, s.Update(ctx, u))
	scribble(u)
	got, err = s.Get(ctx, "k1")
	require.NoError(t, err)
	assertSame(t, want, got, "the record given to Update is copied too")
}

func testConcurrentCreateSameName(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	const callers = 16
	type result struct {
		rec     *keystore.Record
		created bool
		err     error
	}
	results := make([]result, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := record(fmt.Sprintf("k%02d", i), "the-one", keystore.Pending, at(i))
			rec, created, err := s.Create(ctx, r)
			results[i] = result{rec, created, err}
		}()
	}
	close(start)
	wg.Wait()

	winners := 0
	var winner string
	for i, res := range results {
		require.NoError(t, res.err, "caller %d", i)
		require.NotNil(t, res.rec, "caller %d", i)
		if res.created {
			winners++
			winner = res.rec.Key
		}
	}
	require.Equal(t, 1, winners, "exactly one create of a name stores a record")
	for i, res := range results {
		assert.Equal(t, winner, res.rec.Key, "caller %d sees the winner", i)
	}
	all, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Equal(t, []string{winner}, keys(all))
}

func testConcurrentWrites(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	const callers = 24
	errs := make(chan error, 3*callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := record(fmt.Sprintf("k%02d", i), fmt.Sprintf("n%02d", i), keystore.Pending, at(i))
			if _, created, err := s.Create(ctx, r); err != nil || !created {
				errs <- fmt.Errorf("create %s: created=%v err=%v", r.Key, created, err)
				return
			}
			// Odd callers also repeat their key, which must fail alone,
			// whatever writes it shares a commit with.
			if i%2 == 1 {
				dup := record(r.Key, "", keystore.Pending, at(i))
				if _, _, err := s.Create(ctx, dup); !errors.Is(err, keystore.ErrDuplicateKey) {
					errs <- fmt.Errorf("duplicate %s: err=%v", dup.Key, err)
				}
			}
			if err := s.Update(ctx, finish(r, keystore.Succeeded, at(100+i))); err != nil {
				errs <- fmt.Errorf("update %s: %v", r.Key, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}

	all, err := s.List(ctx, keystore.Filter{States: []keystore.State{keystore.Succeeded}})
	require.NoError(t, err)
	require.Len(t, all, callers)
	for i, r := range all {
		assertSame(t, finish(record(fmt.Sprintf("k%02d", i), fmt.Sprintf("n%02d", i), keystore.Pending, at(i)), keystore.Succeeded, at(100+i)), r)
	}
}

func testInvalidInput(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	_, created, err := s.Create(ctx, nil)
	assert.Error(t, err)
	assert.False(t, created)
	_, _, err = s.Create(ctx, record("", "n", keystore.Pending, at(0)))
	assert.Error(t, err)
	assert.Error(t, s.Update(ctx, nil))
	assert.Error(t, s.Update(ctx, record("", "", keystore.Pending, at(0))))

	all, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Empty(t, all)
	_, err = s.GetByName(ctx, "n")
	assert.ErrorIs(t, err, keystore.ErrNotFound)
}

func testCanceledContext(t *testing.T, s keystore.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := record("k1", "n1", keystore.Pending, at(0))
	_, _, err := s.Create(ctx, r)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(context.Background(), "k1")
	assert.ErrorIs(t, err, keystore.ErrNotFound, "a canceled create writes nothing")

	mustCreate(t, s, r)
	assert.ErrorIs(t, s.Update(ctx, finish(r.Clone(), keystore.Failed, at(1))), context.Canceled)
	got, err := s.Get(context.Background(), "k1")
	require.NoError(t, err)
	assertSame(t, r, got, "a canceled update writes nothing")
}

func testClosed(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	r := record("k1", "n1", keystore.Pending, at(0))
	mustCreate(t, s, r)
	require.NoError(t, s.Close())

	_, _, err := s.Create(ctx, record("k2", "", keystore.Pending, at(1)))
	assert.ErrorIs(t, err, keystore.ErrClosed)
	_, err = s.Get(ctx, "k1")
	assert.ErrorIs(t, err, keystore.ErrClosed)
	_, err = s.GetByName(ctx, "n1")
	assert.ErrorIs(t, err, keystore.ErrClosed)
	assert.ErrorIs(t, s.Update(ctx, r), keystore.ErrClosed)
	_, err = s.List(ctx, keystore.Filter{})
	assert.ErrorIs(t, err, keystore.ErrClosed)
	_, err = s.Purge(ctx, keystore.PurgeRequest{OlderThan: at(100)})
	assert.ErrorIs(t, err, keystore.ErrClosed)
	assert.ErrorIs(t, s.Close(), keystore.ErrClosed)
}

// testDeferredReadsBack: a store that offers keystore.Deferrer shows a
// deferred settle at once, checks it as Update does, and keeps it past
// Close (the suite cannot crash the process; a store's own tests do).
func testDeferredReadsBack(t *testing.T, s keystore.Store) {
	d, ok := s.(keystore.Deferrer)
	if !ok {
		t.Skip("the store does not offer keystore.Deferrer")
	}
	ctx := context.Background()
	r := record("k1", "order-1", keystore.Pending, at(0))
	mustCreate(t, s, r)
	assert.ErrorIs(t, d.UpdateDeferred(ctx, finish(record("absent", "", keystore.Pending, at(0)), keystore.Succeeded, at(1))), keystore.ErrNotFound)

	done := finish(r.Clone(), keystore.Succeeded, at(1))
	require.NoError(t, d.UpdateDeferred(ctx, done))
	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assertSame(t, done, got)
	got, err = s.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assertSame(t, done, got)
	pending, err := s.List(ctx, keystore.Filter{States: []keystore.State{keystore.Pending}})
	require.NoError(t, err)
	assert.Empty(t, pending)

	back := finish(r.Clone(), keystore.Failed, at(2))
	assert.ErrorIs(t, d.UpdateDeferred(ctx, back), keystore.ErrSettled)
	assert.ErrorIs(t, s.Update(ctx, back), keystore.ErrSettled)
	require.NoError(t, s.Close())
}

// testOperationGoneMaySucceed: a Failed record whose answer is its
// operation's 404 (as earlier builds stored an operation gone from the
// server) has an unknown outcome: it may still become Succeeded, never
// anything else, and a purge keeps it unless told to include unknown
// outcomes. Another Failed record stays Failed.
func testOperationGoneMaySucceed(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	gone := finish(record("gone", "n-gone", keystore.Pending, at(0)), keystore.Failed, at(1))
	gone.Operation = "https://api.example.com/v1/operations/op_1"
	gone.Response = &keystore.Response{Status: 404}
	refused := finish(record("refused", "", keystore.Pending, at(0)), keystore.Failed, at(1))
	refused.Response = &keystore.Response{Status: 404} // no operation: the request itself was refused
	mustCreate(t, s, gone)
	mustCreate(t, s, refused)
	require.True(t, gone.OperationGone())
	require.False(t, refused.OperationGone())

	res, err := s.Purge(ctx, keystore.PurgeRequest{OlderThan: at(100), KeepNamesAfter: at(100)})
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 1}, res, "the refused record goes, the gone one stays")
	_, err = s.Get(ctx, "gone")
	require.NoError(t, err)

	pending := gone.Clone()
	pending.State = keystore.Pending
	assert.ErrorIs(t, s.Update(ctx, pending), keystore.ErrSettled)
	won := gone.Clone()
	won.State = keystore.Succeeded
	won.Response = nil
	require.NoError(t, s.Update(ctx, won))
	got, err := s.Get(ctx, "gone")
	require.NoError(t, err)
	assert.Equal(t, keystore.Succeeded, got.State)
	back := got.Clone()
	back.State = keystore.Failed
	assert.ErrorIs(t, s.Update(ctx, back), keystore.ErrSettled, "once Succeeded, never back")
}
