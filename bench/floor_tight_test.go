package bench

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem"
)

// tightIntent is what a minimal client keeping the promise in memory
// holds for one intent: enough to send it again with the same key, to
// tell another payload under that key apart, and to answer a retry from
// the stored answer.
type tightIntent struct {
	key         string
	method, url string
	header      http.Header
	body        []byte
	fingerprint string
	createdAt   time.Time
	settled     bool
	status      int
	respHeader  http.Header
	answer      []byte
}

// tightStore is the least keystore a minimal client needs: a map under a
// lock, holding pointers (nothing encoded, nothing copied).
type tightStore struct {
	mu      sync.Mutex
	intents map[string]*tightIntent
}

func newTightStore() *tightStore { return &tightStore{intents: make(map[string]*tightIntent)} }

func (s *tightStore) put(in *tightIntent) {
	s.mu.Lock()
	s.intents[in.key] = in
	s.mu.Unlock()
}

func (s *tightStore) settle(in *tightIntent, status int, h http.Header, answer []byte) {
	s.mu.Lock()
	in.settled, in.status, in.respHeader, in.answer = true, status, h, answer
	s.mu.Unlock()
}

// tightFloorCall is the least a correct client does for one new payment,
// and nothing else: read the body, fingerprint it with the hash idem uses
// (idem.Fingerprint), make a key with idem's generator (idem.NewKeyV4),
// store the intent before the first byte leaves, send once with the key,
// read the answer into memory and store it, then hand back a body to
// read. Unlike floorCall it builds no keystore.Record, copies no header
// (the request's own map is kept, with its key set) and goes through no
// keystore's checks: it is the floor any client, idem or another, pays
// for the promise on a memory keystore.
func tightFloorCall(b *testing.B, hc *http.Client, store *tightStore, url string) {
	req := newPaymentRequest(b, url)
	body, err := io.ReadAll(req.Body)
	if err != nil {
		b.Fatal(err)
	}
	key, err := idem.NewKeyV4()
	if err != nil {
		b.Fatal(err)
	}
	req.Header["Idempotency-Key"] = []string{key}
	in := &tightIntent{
		key: key, method: req.Method, url: url, header: req.Header, body: body,
		fingerprint: idem.Fingerprint(req.Method, url, body), createdAt: time.Now(),
	}
	store.put(in)
	req.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	answer := make([]byte, resp.ContentLength) // the reference server always sends a length
	if _, err := io.ReadFull(resp.Body, answer); err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	store.settle(in, resp.StatusCode, resp.Header, answer)
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	finish(b, resp, nil)
}

// BenchmarkClientCPUFloor is BenchmarkClientCPU's contenders with the
// tight floor, alternated one by one in one loop (order rotated every
// iteration, each op timed on its own), on the transport that answers at
// once: no network, no server, so an op is the client's own CPU. It
// reports each op's mean (ns/net-http, ns/tight, ns/floor, ns/idem) and
// the ratios idem/tight and tight/net-http; allocations per op are those
// of the four ops together (BenchmarkClientCPU gives them one by one).
func BenchmarkClientCPUFloor(b *testing.B) {
	hc := &http.Client{Transport: answeringTransport{}}
	url := "http://payments.example/v1/payments"
	runFloorContenders(b, hc, url, idemClient(b, hc))
}

// BenchmarkClientCPUTight is the tight floor alone on the answering
// transport, for its allocations (compare BenchmarkClientCPU).
func BenchmarkClientCPUTight(b *testing.B) {
	hc := &http.Client{Transport: answeringTransport{}}
	url := "http://payments.example/v1/payments"
	store := newTightStore()
	b.ReportAllocs()
	for b.Loop() {
		tightFloorCall(b, hc, store, url)
	}
}

// idemClient is an idem Client on hc with the memory keystore, closed
// when the benchmark ends.
func idemClient(b *testing.B, hc *http.Client) *idem.Client {
	c, err := idem.New(idem.WithHTTPClient(hc))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}
