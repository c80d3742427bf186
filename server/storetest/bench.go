package storetest

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/idem/server"
)

// BenchmarkReserveComplete measures one request's store work on s for a
// fresh key: the reservation, then the completion.
func BenchmarkReserveComplete(b *testing.B, s server.Store) {
	b.Helper()
	ctx := b.Context()
	scope := server.Scope{Principal: "bench", Method: http.MethodPost, Route: "/v1/payments"}
	resp := server.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"pay_1"}`)}
	i := 0
	for b.Loop() {
		i++
		res, _, err := s.Reserve(ctx, scope, strconv.Itoa(i), "fp", time.Minute)
		if err != nil || res == nil {
			b.Fatalf("reserve: %v (reservation %v)", err, res)
		}
		if err := s.Complete(ctx, server.Completion{Reservation: *res, Response: resp, Retention: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}
