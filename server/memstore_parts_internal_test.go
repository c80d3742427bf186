package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var partsScope = Scope{Principal: "p", Method: http.MethodPost, Route: "/v1/payments"}

// While Sweep holds one part's lock, requests on keys of every other part
// go through: a sweep never holds the whole store.
func TestSweepHoldsOnePartAtATime(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore()
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	for i := range 2000 {
		_, _, err := s.Reserve(ctx, partsScope, fmt.Sprintf("live-%d", i), "fp", time.Hour)
		require.NoError(t, err)
	}
	held, release := make(chan int), make(chan struct{})
	var once sync.Once
	s.sweepHook = func(part int) {
		once.Do(func() { held <- part; <-release })
	}
	swept := make(chan error, 1)
	go func() { _, err := s.Sweep(context.Background(), 1<<20); swept <- err }()
	part := <-held

	passed := 0
	for i := 0; passed < 100; i++ {
		key := fmt.Sprintf("new-%d", i)
		if s.partOf(partsScope, key) == &s.shards[part] {
			continue
		}
		reqCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		done := make(chan error, 1)
		go func() { _, _, err := s.Reserve(reqCtx, partsScope, key, "fp", time.Hour); done <- err }()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-reqCtx.Done():
			t.Fatalf("a Reserve on part %d waited for the sweep of part %d", s.partIndex(key), part)
		}
		cancel()
		passed++
	}
	close(release)
	require.NoError(t, <-swept)
}

// partIndex is the number of key's part in partsScope.
func (s *MemoryStore) partIndex(key string) int {
	for i := range s.shards {
		if s.partOf(partsScope, key) == &s.shards[i] {
			return i
		}
	}
	return -1
}

// Each Sweep call resumes at the part where the previous one stopped, so
// batches work through the whole store rather than the first parts again.
func TestSweepResumesWhereItStopped(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := NewMemoryStore(WithClock(func() time.Time { return time.Unix(0, now.Load()) }))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	for i := range 3000 {
		res, _, err := s.Reserve(ctx, partsScope, fmt.Sprintf("k-%d", i), "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, Completion{Reservation: *res, Response: Response{Status: 201}, Retention: time.Minute}))
	}
	now.Add(int64(time.Hour))
	var parts []int
	s.sweepHook = func(part int) { parts = append(parts, part) }
	total := 0
	for {
		n, err := s.Sweep(ctx, 100)
		require.NoError(t, err)
		total += n
		if n < 100 {
			break
		}
	}
	assert.Equal(t, 3000, total)
	visits := make(map[int]int)
	for _, p := range parts {
		visits[p]++
	}
	assert.Len(t, visits, memShardCount, "every part was swept")
	assert.Less(t, len(parts), 3*memShardCount, "no part is swept over and over")
	records, bytes := s.Usage()
	assert.Zero(t, records)
	assert.Zero(t, bytes)
}

// A full store reclaims the due records of the new key's part at once.
func TestFullStoreReclaimsDueRecordsOfTheKeysPart(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := NewMemoryStore(WithClock(func() time.Time { return time.Unix(0, now.Load()) }), WithCapacity(1, 0))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	res, _, err := s.Reserve(ctx, partsScope, "old", "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, Completion{Reservation: *res, Response: Response{Status: 201}, Retention: time.Minute}))
	key := ""
	for i := 0; key == ""; i++ {
		if k := fmt.Sprintf("new-%d", i); s.partOf(partsScope, k) == s.partOf(partsScope, "old") {
			key = k
		}
	}
	_, _, err = s.Reserve(ctx, partsScope, key, "fp", time.Minute)
	require.ErrorIs(t, err, ErrStoreFull, "the old record is within its retention")
	now.Add(int64(2 * time.Minute))
	res, _, err = s.Reserve(ctx, partsScope, key, "fp", time.Minute)
	require.NoError(t, err, "the due record of the part made room")
	require.NotNil(t, res)
	rec, err := s.Lookup(ctx, partsScope, "old")
	require.NoError(t, err)
	assert.Nil(t, rec)
}

// BenchmarkSweepLockHold sweeps a store of 1M live records, none due (the
// worst case: every record is examined), and reports how long a sweep
// held one lock a request could need: median, 99th percentile and
// longest (which a loaded host's preemptions and GC pauses inflate). A hold
// is timed from the hook in one part to the hook in the next, so it
// includes taking the next lock: an upper bound.
func BenchmarkSweepLockHold(b *testing.B) {
	const records = 1_000_000
	// Twice the records it holds: one principal fills the store, and a
	// store near its bound refuses a principal past its fair share.
	s := NewMemoryStore(WithCapacity(2*records, 0))
	defer s.Close()
	ctx := context.Background()
	for i := range records {
		res, _, err := s.Reserve(ctx, partsScope, fmt.Sprintf("key-%d", i), "fp", time.Minute)
		if err != nil || res == nil {
			b.Fatalf("fill %d: %v", i, err)
		}
		if err := s.Complete(ctx, Completion{Reservation: *res, Response: Response{Status: 201, Body: []byte("{}")}, Retention: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
	var last time.Time
	var holds []time.Duration
	s.sweepHook = func(int) {
		now := time.Now()
		if !last.IsZero() {
			holds = append(holds, now.Sub(last))
		}
		last = now
	}
	for b.Loop() {
		last = time.Time{}
		if _, err := s.Sweep(ctx, DefaultSweepBatch); err != nil {
			b.Fatal(err)
		}
		holds = append(holds, time.Since(last))
	}
	slices.Sort(holds)
	b.ReportMetric(float64(holds[len(holds)/2].Microseconds()), "p50-hold-µs")
	b.ReportMetric(float64(holds[len(holds)*99/100].Microseconds()), "p99-hold-µs")
	b.ReportMetric(float64(holds[len(holds)-1].Microseconds()), "max-hold-µs")
}

// A full store refusing new keys scans a part for due records once, then
// not again until the part's earliest record is due; a record written
// since with an earlier due time is reclaimed when it is due.
func TestFullStoreScansAPartOnlyWhenARecordIsDue(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	s := NewMemoryStore(WithClock(func() time.Time { return time.Unix(0, now.Load()) }), WithCapacity(2, 0),
		WithReservationGrace(time.Hour))
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	sameShard := func(of string, n int) []string {
		var keys []string
		for i := 0; len(keys) < n; i++ {
			if k := fmt.Sprintf("%s-%d", of, i); s.partOf(partsScope, k) == s.partOf(partsScope, of) {
				keys = append(keys, k)
			}
		}
		return keys
	}
	keys := sameShard("held", 3)
	held, _, err := s.Reserve(ctx, partsScope, "held", "fp", time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, Completion{Reservation: *held, Response: Response{Status: 201}, Retention: 24 * time.Hour}))
	inFlight, _, err := s.Reserve(ctx, partsScope, keys[0], "fp", time.Minute)
	require.NoError(t, err)

	_, _, err = s.Reserve(ctx, partsScope, keys[1], "fp", time.Minute)
	require.ErrorIs(t, err, ErrStoreFull)
	sh := s.partOf(partsScope, "held")
	sh.mu.Lock()
	known, next := sh.dueKnown, sh.nextDue
	sh.mu.Unlock()
	require.True(t, known, "the refusal's scan learned when the part is next due")
	assert.Equal(t, now.Load()+int64(time.Minute+time.Hour), next, "the reservation: lease plus grace")

	// Completing with a short retention brings the part's next due time
	// forward; once it passes, the record is reclaimed for a new key.
	require.NoError(t, s.Complete(ctx, Completion{Reservation: *inFlight, Response: Response{Status: 201}, Retention: time.Second}))
	sh.mu.Lock()
	next = sh.nextDue
	sh.mu.Unlock()
	assert.Equal(t, now.Load()+int64(time.Second), next)
	_, _, err = s.Reserve(ctx, partsScope, keys[1], "fp", time.Minute)
	require.ErrorIs(t, err, ErrStoreFull, "nothing is due yet")
	now.Add(int64(2 * time.Second))
	res, _, err := s.Reserve(ctx, partsScope, keys[1], "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res)
}

// partOf returns the part holding (scope, key).
func (s *MemoryStore) partOf(scope Scope, key string) *memShard {
	sh, _ := s.shardOf(scope, key)
	return sh
}
