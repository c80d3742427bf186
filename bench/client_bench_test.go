package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/internal/testserver"
)

// paymentBody is the payload of every benchmarked call.
var paymentBody = []byte(`{"amount":1000,"currency":"EUR","reference":"invoice-2025-0001"}`)

const benchToken = "bench-tenant"

// newPaymentServer starts the reference server (memory store) on loopback.
func newPaymentServer(b *testing.B) *httptest.Server {
	b.Helper()
	ref, err := testserver.New()
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(ref.Handler())
	b.Cleanup(func() {
		srv.Close()
		_ = ref.Close()
	})
	return srv
}

func newPaymentRequest(b *testing.B, url string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(paymentBody))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	return req
}

// finish reads and closes the answer, as every caller must, and checks it.
func finish(b *testing.B, resp *http.Response, err error) {
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// postWithKey is one plain POST of a new payment with a fresh UUIDv4 key
// set by hand: every benchmark's baseline op.
func postWithKey(b *testing.B, hc *http.Client, url string) {
	req := newPaymentRequest(b, url)
	req.Header.Set("Idempotency-Key", uuid.NewString())
	resp, err := hc.Do(req)
	finish(b, resp, err)
}

// beginAndDo is one new payment through idem: Begin, then Do.
func beginAndDo(b *testing.B, c *idem.Client, url string) {
	ctx := context.Background()
	in, err := c.Begin(ctx, "", newPaymentRequest(b, url))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := c.Do(ctx, in)
	finish(b, resp, err)
}

// runIdemCalls is a benchmark loop of beginAndDo through a Client on hc
// with opts added, closed when the benchmark ends.
func runIdemCalls(b *testing.B, hc *http.Client, url string, opts ...idem.Option) {
	c, err := idem.New(append([]idem.Option{idem.WithHTTPClient(hc)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	b.ReportAllocs()
	for b.Loop() {
		beginAndDo(b, c, url)
	}
}

// BenchmarkCall is the per-call cost of one new payment through each
// client, against the same in-process reference server and the same
// connection pool. One op is one new intent end to end: for idem, Begin
// (fingerprint, key, keystore write) then Do (send, store the answer);
// for the baselines, a fresh UUIDv4 key set by hand and one POST. The
// server's own work is in every op, so the ratios are what a user pays
// on top of a plain POST, loopback network included.
func BenchmarkCall(b *testing.B) {
	srv := newPaymentServer(b)
	url := srv.URL + "/v1/payments"
	hc := srv.Client()

	b.Run("client=net-http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			postWithKey(b, hc, url)
		}
	})
	b.Run("client=retryablehttp", func(b *testing.B) {
		rc := retryablehttp.NewClient()
		rc.Logger = nil
		rc.HTTPClient = hc
		b.ReportAllocs()
		for b.Loop() {
			req, err := retryablehttp.FromRequest(newPaymentRequest(b, url))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", uuid.NewString())
			resp, err := rc.Do(req)
			finish(b, resp, err)
		}
	})
	b.Run("client=idem-memory", func(b *testing.B) { runIdemCalls(b, hc, url) })
	b.Run("client=idem-bbolt", func(b *testing.B) {
		runIdemCalls(b, hc, url, idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil))
	})
}
