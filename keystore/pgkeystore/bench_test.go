package pgkeystore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkPostgresCreate measures one durable Create (one committed
// INSERT) at a time.
func BenchmarkPostgresCreate(b *testing.B) {
	ctx := context.Background()
	p := openTestPostgres(b)
	r := pendingRecord(0)
	i := 0
	for b.Loop() {
		r.Key = fmt.Sprintf("bench-%d", i)
		i++
		if _, _, err := p.Create(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresCreateParallel measures Create from many goroutines
// sharing one pool, as a busy client process does.
func BenchmarkPostgresCreateParallel(b *testing.B) {
	ctx := context.Background()
	p := openTestPostgres(b)
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		r := pendingRecord(0)
		for pb.Next() {
			r.Key = fmt.Sprintf("bench-%d", seq.Add(1))
			if _, _, err := p.Create(ctx, r); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkPostgresClaim measures claiming and releasing batches of 10
// pending records.
func BenchmarkPostgresClaim(b *testing.B) {
	ctx := context.Background()
	p := openTestPostgres(b)
	for i := range 100 {
		if _, _, err := p.Create(ctx, pendingRecord(i)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		recs, err := p.Claim(ctx, "bench", time.Minute, 10)
		if err != nil || len(recs) != 10 {
			b.Fatalf("claim: %d records, %v", len(recs), err)
		}
		for _, r := range recs {
			if err := p.Unclaim(ctx, r.Key, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	}
}
