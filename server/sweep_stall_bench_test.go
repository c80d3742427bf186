package server_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem/server"
)

// BenchmarkSweepStall measures how long the request path waits on a
// running sweep: 1M live records, none due, so every sweep examines every
// record (the worst case), swept in a loop by one goroutine while the
// benchmark reserves and releases keys of its own. It reports the longest
// and the 99th-percentile Reserve of the run.
func BenchmarkSweepStall(b *testing.B) {
	const records = 1_000_000
	// Twice the records it holds: one principal fills the store, and a
	// store near its bound refuses a principal past its fair share.
	s := server.NewMemoryStore(server.WithCapacity(2*records, 0))
	defer s.Close()
	ctx := context.Background()
	fingerprint := fp(`{"a":1}`)
	for i := range records {
		res, _, err := s.Reserve(ctx, memScope, newBenchKey(i), fingerprint, time.Minute)
		if err != nil || res == nil {
			b.Fatalf("fill %d: %v", i, err)
		}
		if err := s.Complete(ctx, completion(*res, "{}", time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
	sweepCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	sweeps := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sweepCtx.Err() == nil {
			if _, err := s.Sweep(sweepCtx, server.DefaultSweepBatch); err != nil && sweepCtx.Err() == nil {
				b.Error(err)
				return
			}
			sweeps++
		}
	}()
	scope := server.Scope{Principal: "other", Method: memScope.Method, Route: memScope.Route}
	var waits []time.Duration
	i := 0
	for b.Loop() {
		key := newBenchKey(records + i%1000)
		i++
		start := time.Now()
		res, _, err := s.Reserve(ctx, scope, key, fingerprint, time.Minute)
		waits = append(waits, time.Since(start))
		if err != nil || res == nil {
			b.Fatalf("reserve: %v", err)
		}
		if err := s.Release(ctx, *res); err != nil {
			b.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)-1].Microseconds()), "max-µs")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(sweeps), "sweeps")
}
