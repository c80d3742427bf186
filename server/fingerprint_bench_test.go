package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemkit/idem/server"
)

// floatArray is a JSON array of floats just under size bytes: the body
// whose canonical form is the dearest to compute per byte.
func floatArray(size int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < size-16; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d.%d", i%1000, i%97)
	}
	b.WriteByte(']')
	return b.Bytes()
}

func BenchmarkFingerprintFloatArray1MiB(b *testing.B) {
	body := floatArray(server.DefaultMaxBody)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		server.Fingerprint(http.MethodPost, paymentsRoute, body)
	}
}

// BenchmarkFingerprintMiddlewareFloatArray1MiB is the whole guarded
// request up to its answer, over a store that is never reached when the
// body is refused first.
func BenchmarkFingerprintMiddlewareFloatArray1MiB(b *testing.B) {
	body := floatArray(server.DefaultMaxBody)
	store := server.NewMemoryStore()
	b.Cleanup(func() { _ = store.Close() })
	h := mustNew(b, store).Wrap(paymentsRoute, &countingHandler{})
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		r := httptest.NewRequest(http.MethodPost, paymentsRoute, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer tok")
		r.Header.Set(server.KeyHeader, fmt.Sprintf("k-%d", i))
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
}
