// Command consumer ships orders from a RabbitMQ queue exactly once per
// message id, however often the broker delivers a message: each delivery
// runs through server.Once on a PostgreSQL store, and the shipment row is
// committed in the same transaction as the id's completion. The delivery
// is acked only after that commit, and requeued on a transient failure,
// so a crash anywhere leaves either nothing done (the broker redelivers
// and the order ships) or the shipment and its completion (the redelivery
// is recognised and acked).
//
//	go run ./examples/consumer -publish 5 -copies 2   # publish orders 1-5, each twice
//	go run ./examples/consumer -idle 2s               # ship them, exit once the queue is idle
//
// The broker and the database come from -amqp (or AMQP_URL) and
// -postgres (or DATABASE_URL).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// Defaults of the broker and the database, overridden by AMQP_URL and
// DATABASE_URL, then by the flags.
const (
	defaultAMQP     = "amqp://guest:guest@127.0.0.1:5672/"
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(cli(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// config is what the command line asks for.
type config struct {
	amqpURL  string
	dsn      string
	queue    string
	exchange string
	schema   string

	publish  int    // publish this many orders and exit
	copies   int    // send each published message this many times
	idPrefix string // message ids are idPrefix followed by 1..publish

	idle         time.Duration // exit once no message came for this long; 0 runs until interrupted
	prefetch     int
	lease        time.Duration
	storeTimeout time.Duration
	retryDelay   time.Duration
	effectDelay  time.Duration // hold each shipment's transaction open this long before it commits
	ackDelay     time.Duration // wait this long between the commit and the ack
	verbose      bool          // print every step of every delivery

	// nackAfterCommit, when set, is asked after each shipment committed
	// whether to requeue the delivery instead of acking it: a transient
	// failure at the worst moment, for tests.
	nackAfterCommit func(id string) bool
}

// cli runs the command with args and returns its exit status. Every
// failure is one line on stderr.
func cli(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if err := run(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "consumer:", oneLine(err))
		return 1
	}
	return 0
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("consumer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.amqpURL, "amqp", orDefault(getenv("AMQP_URL"), defaultAMQP), "RabbitMQ URL (env AMQP_URL)")
	fs.StringVar(&cfg.dsn, "postgres", orDefault(getenv("DATABASE_URL"), defaultPostgres), "PostgreSQL DSN of the keys and shipments (env DATABASE_URL)")
	fs.StringVar(&cfg.queue, "queue", "idem.example.orders", "durable queue the orders are consumed from")
	fs.StringVar(&cfg.exchange, "exchange", "", "direct exchange the queue is bound to under its own name; empty uses the default exchange")
	fs.StringVar(&cfg.schema, "schema", "idem_consumer", "PostgreSQL schema of the keys and shipments")
	fs.IntVar(&cfg.publish, "publish", 0, "publish this many orders, then exit without consuming")
	fs.IntVar(&cfg.copies, "copies", 1, "with -publish, send each message this many times, as a publisher that retries does")
	fs.StringVar(&cfg.idPrefix, "id-prefix", "order-", "with -publish, message ids are this prefix and 1..N")
	fs.DurationVar(&cfg.idle, "idle", 0, "exit once no message has come for this long; 0 consumes until interrupted")
	fs.IntVar(&cfg.prefetch, "prefetch", 10, "unacked deliveries the broker may hand this consumer")
	fs.DurationVar(&cfg.lease, "lease", 10*time.Second, "how long a message id is held before a redelivery may take it over; outlast the slowest shipment")
	fs.DurationVar(&cfg.storeTimeout, "store-timeout", server.DefaultStoreTimeout, "bound on each call to the key store")
	fs.DurationVar(&cfg.retryDelay, "retry-delay", 200*time.Millisecond, "wait before requeueing a delivery that failed for now")
	fs.DurationVar(&cfg.effectDelay, "effect-delay", 0, "hold each shipment's transaction open this long, to watch a crash mid-message")
	fs.DurationVar(&cfg.ackDelay, "ack-delay", 0, "wait this long between a shipment's commit and its ack, to watch a crash before the ack")
	fs.BoolVar(&cfg.verbose, "v", false, "print every step of every delivery: received, shipping, acked")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		err := fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
		fmt.Fprintln(stderr, "consumer:", err)
		return config{}, err
	case cfg.publish < 0 || cfg.copies < 1 || cfg.prefetch < 1 || cfg.lease <= 0 || cfg.storeTimeout <= 0 || cfg.retryDelay < 0:
		err := errors.New("-publish must not be negative; -copies and -prefetch must be at least 1; -lease and -store-timeout must be positive")
		fmt.Fprintln(stderr, "consumer:", err)
		return config{}, err
	case cfg.queue == "":
		err := errors.New("-queue must not be empty")
		fmt.Fprintln(stderr, "consumer:", err)
		return config{}, err
	}
	return cfg, nil
}

func run(ctx context.Context, cfg config, stdout io.Writer) error {
	broker, err := dialBroker(cfg.amqpURL)
	if err != nil {
		return err
	}
	defer broker.close()
	if err := broker.declare(cfg.exchange, cfg.queue); err != nil {
		return err
	}
	if cfg.publish > 0 {
		return publishOrders(ctx, broker, cfg, stdout)
	}
	store, err := openStore(ctx, cfg.dsn, cfg.schema)
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()
	shipments, err := newShipments(ctx, store)
	if err != nil {
		return err
	}
	c := &consumer{cfg: cfg, broker: broker, store: store, shipments: shipments, out: stdout}
	return c.run(ctx)
}

// openStore opens the key store, bounded, with the DSN's password out of
// every error.
func openStore(ctx context.Context, dsn, schema string) (*pgstore.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	store, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema))
	if err != nil {
		return nil, fmt.Errorf("cannot connect to PostgreSQL at %s: %w", redactURL(dsn), err)
	}
	return store, nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// oneLine keeps a multi-line error on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
