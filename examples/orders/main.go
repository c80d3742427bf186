// Command orders is an API that takes an order, charges a payment
// provider and books a shipment with a carrier, undoing the charge when
// the carrier refuses, so that a crash anywhere charges, ships, refunds
// and announces each order once. See README.md for the recipe.
//
//	go run ./examples/orders -addr 127.0.0.1:8080
//	curl -H 'Authorization: Bearer tenant-a' -H 'Idempotency-Key: o-1' \
//	     -d '{"amount":1500,"currency":"EUR","ship_to":"FR"}' localhost:8080/orders
//
// The database and the broker come from -postgres (or DATABASE_URL) and
// -amqp (or AMQP_URL); the provider and the carrier from -provider and
// -carrier, each a reference server started in-process when empty.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idem/idemtest"
)

// Defaults, overridden by DATABASE_URL and AMQP_URL, then by the flags.
const (
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	defaultAMQP     = "amqp://guest:guest@127.0.0.1:5672/"
)

// roles are the parts one process may run; by default all of them.
var roles = []string{"api", "completer", "relay", "consumer"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// config is what the command line asks for.
type config struct {
	addr, dsn, amqpURL, schema, queue string
	provider, carrier, token          string
	secret                            string
	roles                             []string

	lease, storeTimeout, claimLease time.Duration
	completeEvery, completeAfter    time.Duration
	relayEvery                      time.Duration
}

// has says whether the process runs role.
func (c config) has(role string) bool { return slices.Contains(c.roles, role) }

// cli runs the command and returns its exit status.
func cli(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "orders:", err)
		return 2
	}
	if err := run(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "orders:", strings.Join(strings.Fields(err.Error()), " "))
		return 1
	}
	return 0
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("orders", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	var roleList string
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "address the API listens on (port 0: any; the address is printed)")
	fs.StringVar(&cfg.dsn, "postgres", orDefault(getenv("DATABASE_URL"), defaultPostgres), "PostgreSQL DSN of the orders, keys, intents and runs (env DATABASE_URL)")
	fs.StringVar(&cfg.amqpURL, "amqp", orDefault(getenv("AMQP_URL"), defaultAMQP), "RabbitMQ URL the paid messages go through (env AMQP_URL)")
	fs.StringVar(&cfg.schema, "schema", "idem_orders", "PostgreSQL schema of every table of the example")
	fs.StringVar(&cfg.queue, "queue", "idem.example.orders.paid", "durable queue of the paid messages")
	fs.StringVar(&cfg.provider, "provider", "", "base URL of the payment provider (Stripe's dialect); empty starts a reference server in-process")
	fs.StringVar(&cfg.carrier, "carrier", "", "base URL of the carrier (Stripe's dialect); empty starts a reference server in-process")
	fs.StringVar(&cfg.token, "token", "sk_test_orders", "bearer token of the API at the provider and the carrier")
	fs.StringVar(&cfg.secret, "secret", orDefault(getenv("ORDERS_KEY_SECRET"), ""), "secret (16 bytes or more) the provider keys are derived with, the same on every replica and across restarts (env ORDERS_KEY_SECRET)")
	fs.StringVar(&roleList, "roles", strings.Join(roles, ","), "parts this process runs: api, completer, relay, consumer")
	fs.DurationVar(&cfg.lease, "lease", 10*time.Second, "how long an inbound key (or message id) is held before a retry may take it over")
	fs.DurationVar(&cfg.storeTimeout, "store-timeout", 3*time.Second, "bound on each call to the keys' store; the lease must be 3 times this")
	fs.DurationVar(&cfg.claimLease, "claim-lease", 30*time.Second, "how long a provider call's intent stays with the process that began it before the completer may take it")
	fs.DurationVar(&cfg.completeEvery, "complete-every", time.Second, "interval of the completer's passes")
	fs.DurationVar(&cfg.completeAfter, "complete-after", 5*time.Second, "the completer takes up an order untouched for this long")
	fs.DurationVar(&cfg.relayEvery, "relay-every", 200*time.Millisecond, "interval of the outbox relay's passes")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	cfg.roles = strings.Split(roleList, ",")
	for _, r := range cfg.roles {
		if !slices.Contains(roles, r) {
			return config{}, fmt.Errorf("-roles: unknown role %q (api, completer, relay, consumer)", r)
		}
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case len(cfg.secret) < 16:
		return config{}, errors.New("-secret (or ORDERS_KEY_SECRET) must be at least 16 bytes: the provider keys are derived with it")
	case cfg.lease <= 0 || cfg.storeTimeout <= 0 || cfg.claimLease <= 0 || cfg.completeEvery <= 0 || cfg.relayEvery <= 0 || cfg.completeAfter < 0:
		return config{}, errors.New("every duration must be positive")
	}
	return cfg, nil
}

// run starts the parts cfg.roles names and serves until ctx ends.
func run(ctx context.Context, cfg config, stdout io.Writer) error {
	for _, ref := range []*string{&cfg.provider, &cfg.carrier} {
		if *ref != "" {
			continue
		}
		srv, err := idemtest.Start(idemtest.WithDialect("stripe"))
		if err != nil {
			return err
		}
		defer srv.Close()
		*ref = srv.URL
	}
	s, err := newService(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer s.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 4)
	if cfg.has("relay") || cfg.has("consumer") {
		if err := s.startBroker(ctx, errc); err != nil {
			return err
		}
	}
	if cfg.has("completer") {
		go s.runCompleter(ctx)
	}
	if cfg.has("api") {
		ln, err := net.Listen("tcp", cfg.addr)
		if err != nil {
			return err
		}
		srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { errc <- srv.Serve(ln) }()
		defer func() {
			shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
			defer stop()
			_ = srv.Shutdown(shutdown)
		}()
		s.logf("listening on %s (provider %s, carrier %s)", ln.Addr(), cfg.provider, cfg.carrier)
	}
	s.logf("ready")
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

// startBroker connects the relay and the consumer, each on a connection
// of its own.
func (s *service) startBroker(ctx context.Context, errc chan<- error) error {
	if s.cfg.has("relay") {
		b, err := dialBroker(s.cfg.amqpURL, s.cfg.queue)
		if err != nil {
			return err
		}
		s.closers = append(s.closers, b.close)
		go s.runRelay(ctx, b)
	}
	if s.cfg.has("consumer") {
		b, err := dialBroker(s.cfg.amqpURL, s.cfg.queue)
		if err != nil {
			return err
		}
		s.closers = append(s.closers, b.close)
		go func() {
			if err := s.runConsumer(ctx, b); err != nil {
				errc <- err
			}
		}()
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
