package bench

import (
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// newCallBench starts the in-process reference server for a call
// benchmark and returns its payments URL, the client of its connection
// pool and an idem Client on that pool with the memory keystore.
func newCallBench(b *testing.B) (string, *http.Client, *idem.Client) {
	srv := newPaymentServer(b)
	hc := srv.Client()
	c, err := idem.New(idem.WithHTTPClient(hc))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return srv.URL + "/v1/payments", hc, c
}

// BenchmarkCallPaired is BenchmarkCall's net-http and idem-memory ops
// alternated one by one in a single loop, against the same in-process
// reference server, connection pool and Client, their order swapped on
// every iteration. Each op is timed on its own, so the host's drift
// (other tenants of a shared machine change its speed from one second to
// the next) hits both alike; BenchmarkCall's contenders, run one after
// the other, see different seconds. It reports the ratio of idem's total
// time to net/http's (idem/net-http) and each op's mean (ns/net-http,
// ns/idem); ns/op is one pair.
func BenchmarkCallPaired(b *testing.B) {
	url, hc, c := newCallBench(b)
	plain := func() { postWithKey(b, hc, url) }
	withIdem := func() { beginAndDo(b, c, url) }
	var plainTime, idemTime time.Duration
	n := 0
	for b.Loop() {
		first, second := plain, withIdem
		firstTime, secondTime := &plainTime, &idemTime
		if n%2 == 1 {
			first, second = withIdem, plain
			firstTime, secondTime = &idemTime, &plainTime
		}
		t0 := time.Now()
		first()
		t1 := time.Now()
		second()
		*secondTime += time.Since(t1)
		*firstTime += t1.Sub(t0)
		n++
	}
	if n == 0 || plainTime == 0 {
		return
	}
	b.ReportMetric(float64(idemTime)/float64(plainTime), "idem/net-http")
	b.ReportMetric(float64(plainTime.Nanoseconds())/float64(n), "ns/net-http")
	b.ReportMetric(float64(idemTime.Nanoseconds())/float64(n), "ns/idem")
}

// BenchmarkClientCPU is BenchmarkCall without the network and the
// server (named apart from BenchmarkCall, so that a -bench pattern for
// BenchmarkCall's contenders never runs it too): the transport answers every request at once with a fixed 201,
// as the reference server's, so an op is the client's own work alone,
// with every cache warm. net-http builds the request, sets a key and
// sends it; floor is floorCall, the least a client keeping the promise
// does; idem-memory is Begin then Do. The differences are the CPU the
// promise and idem spend per call; BenchmarkCall shows what it costs on top of a real
// loopback exchange, where the network and the server's work have evicted
// the client's code and data from the caches between calls.
func BenchmarkClientCPU(b *testing.B) {
	hc := &http.Client{Transport: answeringTransport{}}
	url := "http://payments.example/v1/payments"
	b.Run("client=net-http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			postWithKey(b, hc, url)
		}
	})
	b.Run("client=floor", func(b *testing.B) {
		store := keystore.NewMemory()
		b.Cleanup(func() { _ = store.Close() })
		b.ReportAllocs()
		for b.Loop() {
			floorCall(b, hc, store, url)
		}
	})
	b.Run("client=idem-memory", func(b *testing.B) { runIdemCalls(b, hc, url) })
}
