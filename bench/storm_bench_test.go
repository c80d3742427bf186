package bench

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkStorm runs the storm of bench/cmd/storm in process (a real
// loopback TCP server): each op is one herd of 200 callers released at
// once through one shared client, against 8 slots of 25 ms. The figures
// to read are the reported metrics, not ns/op; bench/cmd/storm runs the
// server in its own process and interleaves the strategies.
//
//	go test -run '^$' -bench BenchmarkStorm -benchtime 1x ./bench/
func BenchmarkStorm(b *testing.B) {
	srv := httptest.NewServer(NewShedServer(8, 25*time.Millisecond, 0))
	defer srv.Close()
	for _, c := range StormContenders() {
		b.Run(c.Name, func(b *testing.B) {
			var attempts, failed, makespan float64
			for b.Loop() {
				res, err := RunStorm(context.Background(), StormConfig{URL: srv.URL, Callers: 200}, c)
				if err != nil {
					b.Fatal(err)
				}
				attempts += res.AttemptsPerCaller()
				failed += float64(res.Failed)
				makespan += res.Makespan.Seconds()
			}
			n := float64(b.N)
			b.ReportMetric(attempts/n, "attempts/caller")
			b.ReportMetric(failed/n, "failed/op")
			b.ReportMetric(makespan/n, "makespan-s/op")
		})
	}
}
