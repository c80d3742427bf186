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

// BenchmarkCallFloor runs three ops in one loop against the same
// in-process reference server and connection pool, in an order that
// rotates on every iteration, each op timed on its own (as
// BenchmarkCallPaired does for two): a plain POST (net-http), floorCall
// (floor) and Begin then Do (idem). It reports each op's total time over
// the plain POST's (floor/net-http, idem/net-http), idem's over the
// floor's (idem/floor), and the plain POST's mean (ns/net-http).
// floor/net-http is what the promise itself costs on this host, so it
// bounds from below any target set for idem/net-http.
func BenchmarkCallFloor(b *testing.B) {
	url, hc, c := newCallBench(b)
	store := keystore.NewMemory()
	b.Cleanup(func() { _ = store.Close() })
	ops := [...]func(){
		func() { postWithKey(b, hc, url) },
		func() { floorCall(b, hc, store, url) },
		func() { beginAndDo(b, c, url) },
	}
	var total [len(ops)]time.Duration
	n := 0
	for b.Loop() {
		for i := range ops {
			k := (i + n) % len(ops)
			t0 := time.Now()
			ops[k]()
			total[k] += time.Since(t0)
		}
		n++
	}
	if n == 0 || total[0] == 0 || total[1] == 0 {
		return
	}
	b.ReportMetric(float64(total[1])/float64(total[0]), "floor/net-http")
	b.ReportMetric(float64(total[2])/float64(total[0]), "idem/net-http")
	b.ReportMetric(float64(total[2])/float64(total[1]), "idem/floor")
	b.ReportMetric(float64(total[0].Nanoseconds())/float64(n), "ns/net-http")
}
