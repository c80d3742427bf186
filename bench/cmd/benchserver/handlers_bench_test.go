package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testserver"
)

// BenchmarkHandlers measures one POST /v1/payments in process, without a
// network: the plain net/http handler, the reference handler without the
// idempotency layer (unprotected) and the whole reference server
// (protected), each on a fresh memory store that keeps every payment and
// key, as a server under load does. cpu-µs/op is the process's CPU per
// request, garbage collection included, which a loaded machine disturbs
// less than the time per request. protected − unprotected is the
// layer's own cost; unprotected − plain the reference handler's.
func BenchmarkHandlers(b *testing.B) {
	b.Run("handler=plain", func(b *testing.B) {
		st := testserver.NewMemoryStore()
		defer st.Close()
		benchmarkHandler(b, plainPaymentsHandler(st))
	})
	b.Run("handler=unprotected", func(b *testing.B) {
		st := testserver.NewMemoryStore()
		defer st.Close()
		benchmarkHandler(b, testserver.UnguardedPaymentsHandler(st))
	})
	b.Run("handler=protected", func(b *testing.B) {
		ref, err := testserver.New()
		if err != nil {
			b.Fatal(err)
		}
		defer ref.Close()
		benchmarkHandler(b, ref.Handler())
	})
}

func benchmarkHandler(b *testing.B, h http.Handler) {
	const body = `{"amount":1000,"currency":"EUR","reference":"load"}`
	b.ReportAllocs()
	before := processCPU(b)
	defer func() {
		b.ReportMetric(float64(processCPU(b)-before)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
	}()
	for i := 0; b.Loop(); i++ {
		req := httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer load-tenant")
		req.Header.Set("Idempotency-Key", "bench-"+strconv.Itoa(i))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}

// processCPU is this process's CPU time so far, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
