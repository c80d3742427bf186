package bench

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem"
)

// BenchmarkBeginLatency is how long each Begin waits on bbolt with 64
// callers sharing one Client without pause, over a run long enough to hold
// folds of the keystore's log (one every 65536 records: run it with
// -test.benchtime 400000x, about 12 s, for six). It reports the
// throughput and the quantiles of the Begins' durations, the longest
// among them: a fold that held every writer for its whole length shows
// there, where a mean hides it. The loop is closed (a caller waits for
// its Begin before the next), so a hold counts once per caller, however
// long it lasts: read the longest wait next to the quantiles.
func BenchmarkBeginLatency(b *testing.B) {
	c, err := idem.New(idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	var next atomic.Int64
	var mu sync.Mutex
	var waits []time.Duration
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if _, err := c.Begin(ctx, "", beginRequest(b)); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			waits = append(waits, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(waits) == 0 {
		return
	}
	slices.Sort(waits)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(len(waits))/elapsed.Seconds(), "begins/s")
	b.ReportMetric(ms(Percentile(waits, 50)), "p50-ms")
	b.ReportMetric(ms(Percentile(waits, 99)), "p99-ms")
	b.ReportMetric(ms(Percentile(waits, 99.9)), "p999-ms")
	b.ReportMetric(ms(waits[len(waits)-1]), "max-ms")
}
