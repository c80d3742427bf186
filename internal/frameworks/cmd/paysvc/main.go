// Command paysvc serves the payments handler of package frameworks in one
// stack, keys and effects in PostgreSQL (each effect committed with its
// key's completion), so a test can SIGKILL it mid-load, start it again on
// the same database and check that every key ends with one effect.
//
// It prints "listening on http://HOST:PORT" once it accepts connections.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/internal/frameworks"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

func main() {
	framework := flag.String("framework", frameworks.Mux, fmt.Sprintf("one of %v", frameworks.AllFrameworks))
	placement := flag.String("placement", frameworks.Bare, fmt.Sprintf("one of %v", frameworks.AllPlacements))
	dsn := flag.String("postgres", "", "PostgreSQL DSN of the keys and the effects (required)")
	schema := flag.String("schema", pgstore.DefaultSchema, "PostgreSQL schema of the keys and the effects")
	lease := flag.Duration("lease", 2*time.Second, "reservation lease")
	slow := flag.Duration("slow", 300*time.Millisecond, "how long a slow payment takes")
	flag.Parse()
	if *dsn == "" {
		log.Fatal("paysvc: -postgres is required")
	}
	ctx := context.Background()
	store, err := pgstore.Open(ctx, *dsn, pgstore.WithSchema(*schema))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ledger := &frameworks.PGLedger{Store: store, Table: pgx.Identifier{*schema, "effects"}.Sanitize()}
	if err := ledger.Create(ctx); err != nil {
		log.Fatal(err)
	}
	layer, err := server.New(store, frameworks.LayerOptions(*placement, *lease)...)
	if err != nil {
		log.Fatal(err)
	}
	h, err := frameworks.Stack{
		Framework: *framework, Placement: *placement, Layer: layer, Timeout: time.Second,
		Payments: &frameworks.Payments{Ledger: ledger, SlowFor: *slow},
	}.Handler()
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.Serve(ln))
}
