package testserver

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkCreatePayment measures POST /v1/payments end to end over a
// keep-alive loopback connection, with and without the idempotency layer,
// so the layer's cost reads as the ratio of the two.
func BenchmarkCreatePayment(b *testing.B) {
	newAPI := func(store Store) *paymentsAPI {
		return &paymentsAPI{store: store, now: time.Now, maxBody: DefaultMaxBody,
			payoutDelay: DefaultPayoutDelay, logger: slog.New(slog.DiscardHandler), principal: principalFunc(processPrincipalKey())}
	}
	b.Run("protected", func(b *testing.B) {
		store := NewMemoryStore()
		h := newIdempotency(store, idemDialect()).Wrap(routePayments, http.HandlerFunc(newAPI(store).createPayment))
		benchmarkPayments(b, h)
	})
	b.Run("unprotected", func(b *testing.B) {
		benchmarkPayments(b, http.HandlerFunc(newAPI(NewMemoryStore()).createPayment))
	})
}

func benchmarkPayments(b *testing.B, h http.Handler) {
	ts := httptest.NewServer(h)
	defer ts.Close()
	client := ts.Client()
	const body = `{"amount":1000,"currency":"EUR","reference":"bench"}`
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req, err := http.NewRequest(http.MethodPost, ts.URL+routePayments, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkServePayment measures the server's own work for one POST
// /v1/payments, without a network or an HTTP client: the whole reference
// server against the bare payment handler, each on a fresh memory store
// that keeps every payment and key, as a server under load does.
func BenchmarkServePayment(b *testing.B) {
	b.Run("protected", func(b *testing.B) {
		srv, err := New()
		if err != nil {
			b.Fatal(err)
		}
		defer srv.Close()
		benchmarkServe(b, srv.Handler())
	})
	b.Run("unprotected", func(b *testing.B) {
		store := NewMemoryStore()
		defer store.Close()
		benchmarkServe(b, UnguardedPaymentsHandler(store))
	})
}

func benchmarkServe(b *testing.B, h http.Handler) {
	const body = `{"amount":1000,"currency":"EUR","reference":"bench"}`
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		req := httptest.NewRequest(http.MethodPost, routePayments, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(KeyHeader, "bench-"+strconv.Itoa(i))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d", rec.Code)
		}
	}
}
