// Command middleware is a small orders API of its own, protected by
// package server: every POST /v1/orders with an Idempotency-Key creates
// one order at most, and a retry gets the first answer back. Each order
// is committed with its key's completion, in memory by default, in one
// PostgreSQL transaction with -postgres.
//
//	go run ./examples/middleware -addr 127.0.0.1:8080
//	go run ./examples/middleware -postgres 'postgres://localhost/app'
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	dsn := flag.String("postgres", "", "PostgreSQL DSN; empty keeps keys and orders in memory")
	schema := flag.String("schema", pgstore.DefaultSchema, "PostgreSQL schema of the keys and orders")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *addr, *dsn, *schema); err != nil {
		log.Fatal(err)
	}
}

// secret keys the hash under which callers' tokens are stored. A real API
// reads it from its secret store and keeps it: another secret puts every
// caller's keys in a new scope.
func secret() []byte {
	if s := os.Getenv("IDEM_PRINCIPAL_SECRET"); s != "" {
		return []byte(s)
	}
	return []byte("example secret: set IDEM_PRINCIPAL_SECRET")
}

func run(ctx context.Context, addr, dsn, schema string) error {
	api, closeStore, err := newAPI(ctx, dsn, schema)
	if err != nil {
		return err
	}
	defer closeStore()
	srv := &http.Server{Addr: addr, Handler: api.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	slog.Info("orders API listening", "addr", addr, "postgres", dsn != "")
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newAPI opens the store dsn names (memory when empty; else PostgreSQL,
// in schema) and the orders API on it; the returned func closes the
// store.
func newAPI(ctx context.Context, dsn, schema string) (*ordersAPI, func(), error) {
	if dsn == "" {
		store := server.NewMemoryStore()
		api, err := newOrdersAPI(store, newMemoryOrders(store))
		return api, func() { _ = store.Close() }, err
	}
	store, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema))
	if err != nil {
		return nil, nil, err
	}
	orders, err := newPostgresOrders(ctx, store)
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	api, err := newOrdersAPI(store, orders)
	return api, func() { _ = store.Close() }, err
}
