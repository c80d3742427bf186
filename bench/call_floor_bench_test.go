package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// floorCall is the least work any client must do to keep idem's promise
// for one new payment on an in-memory keystore, written straight against
// the keystore's public API with nothing else around it: read the body,
// fingerprint it, make a key, store the intent (without its Authorization)
// before the first byte leaves, send once with the key, read the answer
// into memory and store it settled, then hand back a body to read. No
// retries, locks, kept secrets, credential checks, outcome judgement,
// budget, telemetry, or shield against net/http's own resends: what idem
// spends above floorCall is the cost of those.
func floorCall(b *testing.B, hc *http.Client, store *keystore.Memory, url string) {
	ctx := context.Background()
	req := newPaymentRequest(b, url)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		b.Fatal(err)
	}
	key, err := idem.NewKeyV4()
	if err != nil {
		b.Fatal(err)
	}
	stored := make(http.Header, len(req.Header))
	for name, values := range req.Header {
		if name != "Authorization" {
			stored[name] = values
		}
	}
	now := time.Now()
	rec := &keystore.Record{
		Key: key, Method: req.Method, URL: url, Header: stored, Body: body,
		Fingerprint: idem.Fingerprint(req.Method, url, body),
		State:       keystore.Pending, CreatedAt: now, UpdatedAt: now,
	}
	if _, _, err := store.AdoptCreate(ctx, rec); err != nil {
		b.Fatal(err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.Header["Idempotency-Key"] = []string{key}
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	answer := make([]byte, resp.ContentLength) // the reference server always sends a length
	if _, err := io.ReadFull(resp.Body, answer); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	settled := *rec // the store keeps rec as it was handed over
	settled.State, settled.Attempts, settled.UpdatedAt = keystore.Succeeded, 1, time.Now()
	settled.Response = &keystore.Response{Status: resp.StatusCode, Header: resp.Header, Body: answer}
	if err := store.AdoptUpdate(ctx, &settled); err != nil {
		b.Fatal(err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	finish(b, resp, nil)
}

// BenchmarkCallFloor runs four ops in one loop against the same
// in-process reference server and connection pool, in an order that
// rotates on every iteration, each op timed on its own (as
// BenchmarkCallPaired does for two): a plain POST (net-http),
// tightFloorCall (tight: the least a correct client does), floorCall
// (floor: the same through keystore.Memory) and Begin then Do (idem).
// It reports each op's total time over the plain POST's and over the
// tight floor's (see runFloorContenders). tight/net-http is what the
// promise itself costs on this host, so it bounds from below any target
// set for idem/net-http; idem/tight is what idem spends above it.
func BenchmarkCallFloor(b *testing.B) {
	url, hc, c := newCallBench(b)
	runFloorContenders(b, hc, url, c)
}

// runFloorContenders is the loop of BenchmarkCallFloor and
// BenchmarkClientCPUFloor: net-http, tight, floor and idem on hc,
// rotated every iteration, each timed on its own. It reports the ratios
// of their totals (floor/net-http, idem/net-http, idem/floor,
// tight/net-http, idem/tight, floor/tight) and each op's mean.
func runFloorContenders(b *testing.B, hc *http.Client, url string, c *idem.Client) {
	store := keystore.NewMemory()
	b.Cleanup(func() { _ = store.Close() })
	tight := newTightStore()
	const plain, tightOp, floor, withIdem = 0, 1, 2, 3
	ops := [...]func(){
		plain:    func() { postWithKey(b, hc, url) },
		tightOp:  func() { tightFloorCall(b, hc, tight, url) },
		floor:    func() { floorCall(b, hc, store, url) },
		withIdem: func() { beginAndDo(b, c, url) },
	}
	var total [len(ops)]time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range ops {
			k := (i + n) % len(ops)
			t0 := time.Now()
			ops[k]()
			total[k] += time.Since(t0)
		}
		n++
	}
	for _, t := range total {
		if n == 0 || t == 0 {
			return
		}
	}
	ratio := func(a, b int) float64 { return float64(total[a]) / float64(total[b]) }
	b.ReportMetric(ratio(floor, plain), "floor/net-http")
	b.ReportMetric(ratio(withIdem, plain), "idem/net-http")
	b.ReportMetric(ratio(withIdem, floor), "idem/floor")
	b.ReportMetric(ratio(tightOp, plain), "tight/net-http")
	b.ReportMetric(ratio(withIdem, tightOp), "idem/tight")
	b.ReportMetric(ratio(floor, tightOp), "floor/tight")
	for k, name := range [...]string{"ns/net-http", "ns/tight", "ns/floor", "ns/idem"} {
		b.ReportMetric(float64(total[k].Nanoseconds())/float64(n), name)
	}
}
