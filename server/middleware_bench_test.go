package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idemkit/idem/server"
)

func BenchmarkFingerprintJSON(b *testing.B) {
	body := []byte(`{"amount":1000,"currency":"EUR","reference":"order-42","metadata":{"b":[1,2,3],"a":"` + strings.Repeat("x", 800) + `"}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		server.Fingerprint(http.MethodPost, paymentsRoute, body)
	}
}

func BenchmarkFingerprintRaw(b *testing.B) {
	body := []byte(strings.Repeat("amount=1000&currency=EUR&", 40))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		server.Fingerprint(http.MethodPost, paymentsRoute, body)
	}
}

func BenchmarkMiddlewareFirstRequest(b *testing.B) {
	idem := mustNew(b, server.NewMemoryStore())
	wrapped := idem.Wrap(paymentsRoute, &countingHandler{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		rec := httptest.NewRecorder()
		wrapped.ServeHTTP(rec, post(newBenchKey(i), paymentBody).request())
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

func BenchmarkMiddlewareReplay(b *testing.B) {
	idem := mustNew(b, server.NewMemoryStore())
	wrapped := idem.Wrap(paymentsRoute, &countingHandler{})
	wrapped.ServeHTTP(httptest.NewRecorder(), post("key-1", paymentBody).request())
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		wrapped.ServeHTTP(rec, post("key-1", paymentBody).request())
		if !replayed(rec) {
			b.Fatalf("not replayed: %d", rec.Code)
		}
	}
}
