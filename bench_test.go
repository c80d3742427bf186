package idem

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemkit/idem/idemtest"
)

var benchBody = []byte(`{"amount": 1000, "currency": "EUR", "reference": "bench"}`)

// BenchmarkPost compares one payment through idem (Begin + Do, memory
// keystore) with the same POST sent by hand, against one server.
func BenchmarkPost(b *testing.B) {
	srv := idemtest.NewServer(b)
	url := srv.URL + "/v1/payments"
	var seq atomic.Int64
	newReq := func(b *testing.B) *http.Request {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchBody))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		return req
	}
	drain := func(b *testing.B, resp *http.Response, err error) {
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}

	b.Run("idem-do-memory", func(b *testing.B) {
		c, err := New()
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			in, err := c.Begin(ctx, "", newReq(b))
			if err != nil {
				b.Fatal(err)
			}
			resp, err := c.Do(ctx, in)
			drain(b, resp, err)
		}
	})
	b.Run("raw-net-http", func(b *testing.B) {
		hc := srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			req := newReq(b)
			req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-raw-%d", seq.Add(1)))
			resp, err := hc.Do(req)
			drain(b, resp, err)
		}
	})
	b.Run("raw-retryablehttp", func(b *testing.B) {
		rc := retryablehttp.NewClient()
		rc.Logger = nil
		rc.HTTPClient = srv.Client()
		b.ReportAllocs()
		for b.Loop() {
			req, err := retryablehttp.FromRequest(newReq(b))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-rh-%d", seq.Add(1)))
			resp, err := rc.Do(req)
			drain(b, resp, err)
		}
	})
}

func benchBegin(b *testing.B, c *Client) {
	req, err := http.NewRequest(http.MethodPost, exampleURL, bytes.NewReader(benchBody))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if _, err := c.Begin(context.Background(), "", req); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBegin is the cost of creating one durable intent (an fsync'd
// bbolt write) with no other caller.
func BenchmarkBegin(b *testing.B) {
	b.Run("bbolt-lone", func(b *testing.B) {
		c, err := New(WithBoltStore(filepath.Join(b.TempDir(), "bench.db"), nil))
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.ReportAllocs()
		for b.Loop() {
			benchBegin(b, c)
		}
	})
}

// BenchmarkBeginParallel creates durable intents from many goroutines at
// once; ns/op is per intent, so callers=64 against callers=1 shows how
// well concurrent writes share fsyncs.
func BenchmarkBeginParallel(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			c, err := New(WithBoltStore(filepath.Join(b.TempDir(), "bench.db"), nil))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						benchBegin(b, c)
					}
				})
			}
			wg.Wait()
		})
	}
}
