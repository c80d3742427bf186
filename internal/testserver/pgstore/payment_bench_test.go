package pgstore

import (
	"context"
	"net/http"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server"
)

// BenchmarkCreatePayment measures the store's work for one payment from
// 16 goroutines, as 16 connections of a loaded server: unprotected (the
// payment row alone), protected (an asynchronous reservation, then the
// completion and the row in one round trip), and, for comparison, the
// two designs it replaced: the completion and the row in an interactive
// transaction (four round trips), and that with a durable reservation
// too (two durable commits). cpu-µs/op is this process's CPU per
// payment: what the store costs the server, beside the database's own.
func BenchmarkCreatePayment(b *testing.B) {
	dsn := testenv.PostgresDSN(b)
	schema := newSchema(b, dsn)
	async := openStore(b, dsn, schema)
	durable := openStore(b, dsn, schema, WithAsyncReservations(false))
	scope := server.Scope{Principal: "bench", Method: http.MethodPost, Route: "/v1/payments"}
	var seq atomic.Int64
	payment := func() testserver.Payment {
		id := "pay_" + strconv.FormatInt(seq.Add(1), 36) + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
		return testserver.Payment{ID: id, Principal: "bench", Amount: 1000, Currency: "EUR", Status: "succeeded", Created: time.Now()}
	}
	completion := func(s *Store, ctx context.Context, p testserver.Payment) (*testserver.Completion, error) {
		res, _, err := s.Reserve(ctx, scope, p.ID, "fp", time.Minute)
		if err != nil {
			return nil, err
		}
		return &testserver.Completion{Reservation: *res, Response: server.Response{Status: 201, Body: []byte(`{}`)}, Retention: time.Hour}, nil
	}
	viaTx := func(s *Store, ctx context.Context, p testserver.Payment, c *testserver.Completion) error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if err := s.CompleteTx(ctx, tx, *c); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, s.q.insertPayment, p.Principal, p.ID, p.Amount, p.Currency, p.Reference, p.Status, p.Created)
			return err
		})
	}
	cases := []struct {
		name string
		pay  func(ctx context.Context) error
	}{
		{"unprotected", func(ctx context.Context) error { return async.CreatePayment(ctx, payment(), nil) }},
		{"protected", func(ctx context.Context) error {
			p := payment()
			c, err := completion(async, ctx, p)
			if err != nil {
				return err
			}
			return async.CreatePayment(ctx, p, c)
		}},
		{"protected-tx", func(ctx context.Context) error {
			p := payment()
			c, err := completion(async, ctx, p)
			if err != nil {
				return err
			}
			return viaTx(async, ctx, p, c)
		}},
		{"protected-tx-durable-reserve", func(ctx context.Context) error {
			p := payment()
			c, err := completion(durable, ctx, p)
			if err != nil {
				return err
			}
			return viaTx(durable, ctx, p, c)
		}},
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) {
			b.SetParallelism(8) // 8 × GOMAXPROCS goroutines: 16 on two cores
			before := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := bc.pay(context.Background()); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(processCPU(b)-before)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
		})
	}
}

// processCPU is this process's CPU time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
