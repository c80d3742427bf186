// Command shop is a small charges API of its own, in its own module
// (example.com/shop), that guards its routes with the public packages of
// github.com/idemkit/idem only: package server and its memory store, or
// server/pgstore with -postgres. A module outside idem cannot import
// idem's internal packages, so building it proves the public API is
// enough.
//
// It prints "listening on http://HOST:PORT" once it accepts connections,
// and stops on SIGINT or SIGTERM.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// chargesRoute is where the shop creates (POST) and lists (GET) charges.
const chargesRoute = "/shop/v1/charges"

// delayHeader holds a POST for the given duration (at most maxDelay)
// before its effect: a test hook, so a duplicate can arrive while its
// original still runs (idem check --slow-header).
const (
	delayHeader = "X-Shop-Delay"
	maxDelay    = 2 * time.Second
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	dsn := flag.String("postgres", "", "PostgreSQL DSN of the key store; empty keeps keys in memory")
	schema := flag.String("schema", pgstore.DefaultSchema, "PostgreSQL schema of the key store")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dsn, *schema); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, addr, dsn, schema string) error {
	store, err := openStore(ctx, dsn, schema)
	if err != nil {
		return err
	}
	defer store.Close()
	// The layer and the handlers agree on who the caller is: the bearer
	// token, kept only as a keyed hash. The shop's callers hold API keys
	// that never rotate; a request without one is refused 401.
	principal := server.BearerPrincipal([]byte("shop secret"))
	idem, err := server.New(store, server.WithPrincipal(principal))
	if err != nil {
		return err
	}
	shop := &charges{principal: principal, by: make(map[string][]charge)}
	mux := http.NewServeMux()
	mux.Handle("POST "+chargesRoute, idem.Wrap(chargesRoute, http.HandlerFunc(shop.create)))
	mux.HandleFunc("GET "+chargesRoute, shop.list)

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openStore is the memory store, or PostgreSQL when dsn is set.
func openStore(ctx context.Context, dsn, schema string) (server.Store, error) {
	if dsn == "" {
		return server.NewMemoryStore(), nil
	}
	return pgstore.Open(ctx, dsn, pgstore.WithSchema(schema))
}

// charge is one charge of one caller.
type charge struct {
	ID          string `json:"id"`
	AmountCents int    `json:"amount_cents"`
	Memo        string `json:"memo"`
}

// charges keeps every caller's charges in memory.
type charges struct {
	principal server.PrincipalFunc
	mu        sync.Mutex
	by        map[string][]charge // principal → charges
}

func (s *charges) create(w http.ResponseWriter, r *http.Request) {
	if d, err := time.ParseDuration(r.Header.Get(delayHeader)); err == nil && d > 0 {
		time.Sleep(min(d, maxDelay))
	}
	who, err := s.principal(r)
	if err != nil {
		problem(w, http.StatusUnauthorized, err.Error())
		return
	}
	var c charge
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&c); err != nil || c.AmountCents < 1 {
		// Refused before any effect: the layer frees the key, so the
		// corrected request may use it again.
		problem(w, http.StatusUnprocessableEntity, `want {"amount_cents": 1 or more, "memo": "…"}`)
		return
	}
	c.ID = "ch_" + strings.ToLower(rand.Text()[:16])
	s.mu.Lock()
	s.by[who] = append(s.by[who], c)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", chargesRoute+"/"+c.ID)
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(c)
}

func (s *charges) list(w http.ResponseWriter, r *http.Request) {
	who, err := s.principal(r)
	if err != nil {
		problem(w, http.StatusUnauthorized, err.Error())
		return
	}
	s.mu.Lock()
	mine := append([]charge{}, s.by[who]...)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": mine, "total": len(mine)})
}

// problem answers an RFC 9457 problem document.
func problem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
}
