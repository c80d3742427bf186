// Command serverbench measures what the idempotency layer costs a server,
// in one command. It starts one bench/cmd/benchserver process per
// contender, so that no contender's garbage collection or CPU is charged
// to another, and drives them all from its own process in interleaved
// rounds, so that machine drift hits every contender alike:
//
//   - memory: a plain net/http JSON handler (same checks, same store),
//     the reference payment handler without the layer (unprotected), and
//     the whole reference server (protected);
//   - postgres and redis: unprotected and protected on that store;
//     postgres also the reference server in one-commit mode (onecommit:
//     the key, the payment and the answer in one transaction).
//
// It prints requests/s and the server process's CPU per request (medians
// and ranges over the rounds), each protected / unprotected ratio on the
// same store (the median and range of per-round ratios), the layer's own
// CPU per request (protected minus unprotected, per round) and the
// unprotected handler against the plain one. For Postgres contenders it
// also prints the CPU per request of their database backends (read from
// /proc, so only when PostgreSQL runs on this host).
//
//	go run ./bench/cmd/serverbench -rounds 5 -duration 3s
//
// With -peers, the same payments app on Fiber v2 runs too, behind Fiber's
// idempotency middleware and without it, on each store
// (internal/peerbench, a module of its own built with go build there),
// and idem's protected server is compared with it.
//
// With -before, the unprotected and protected servers of another
// benchserver build run in the same rounds, on a schema and key prefix
// of their own, so a change is measured against the build before it.
//
// The Postgres DSN comes from -postgres, else IDEM_BENCH_POSTGRES, else
// IDEM_TEST_POSTGRES; the Redis URL from -redis, IDEM_BENCH_REDIS or
// IDEM_TEST_REDIS. A store without one is left out. Data goes to a schema
// and a key prefix of the run's own, dropped at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idemkit/idem/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverbench:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	benchserver     string
	before          string
	peers           bool
	peerserver      string
	postgres, redis string
	stores          []string
	rounds          int
	load            bench.LoadConfig
	warmup          time.Duration
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("serverbench", flag.ContinueOnError)
	cfg := config{}
	fs.StringVar(&cfg.benchserver, "benchserver", "", "`path` of a built bench/cmd/benchserver (default: build it with go build)")
	fs.StringVar(&cfg.before, "before", "", "`path` of another benchserver build (say, of the previous commit) whose unprotected and protected servers run too, labelled \"before\"")
	fs.BoolVar(&cfg.peers, "peers", false, "run the same payments app on Fiber v2 with and without its idempotency middleware too (internal/peerbench), labelled fiber-idempotency and fiber-unprotected")
	fs.StringVar(&cfg.peerserver, "peerserver", "", "`path` of a built internal/peerbench/cmd/peerserver (default: build it with go build in internal/peerbench)")
	fs.StringVar(&cfg.postgres, "postgres", firstEnv("IDEM_BENCH_POSTGRES", "IDEM_TEST_POSTGRES"), "Postgres `DSN` (default $IDEM_BENCH_POSTGRES, else $IDEM_TEST_POSTGRES)")
	fs.StringVar(&cfg.redis, "redis", firstEnv("IDEM_BENCH_REDIS", "IDEM_TEST_REDIS"), "Redis `URL` (default $IDEM_BENCH_REDIS, else $IDEM_TEST_REDIS)")
	stores := fs.String("stores", "memory,postgres,redis", "comma-separated `stores` to measure")
	fs.IntVar(&cfg.rounds, "rounds", 5, "interleaved rounds")
	fs.DurationVar(&cfg.load.Duration, "duration", 3*time.Second, "length of one contender's turn in a round")
	fs.IntVar(&cfg.load.Conns, "conns", 16, "concurrent keep-alive connections")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured warm-up per contender")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.rounds < 1 || cfg.load.Conns < 1 || cfg.load.Duration <= 0 || cfg.warmup < 0 {
		return config{}, fmt.Errorf("need -rounds >= 1, -conns >= 1, a positive -duration and a non-negative -warmup")
	}
	for _, s := range strings.Split(*stores, ",") {
		switch s = strings.TrimSpace(s); s {
		case "memory", "postgres", "redis":
			cfg.stores = append(cfg.stores, s)
		case "":
		default:
			return config{}, fmt.Errorf("-stores: unknown store %q (want memory, postgres or redis)", s)
		}
	}
	return cfg, nil
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	binary, cleanup, err := benchserverBinary(ctx, cfg.benchserver)
	if err != nil {
		return err
	}
	defer cleanup()
	var peerBin string
	if cfg.peers {
		var peerCleanup func()
		if peerBin, peerCleanup, err = peerserverBinary(ctx, cfg.peerserver); err != nil {
			return err
		}
		defer peerCleanup()
	}

	names := newRunNames()
	contenders, skipped := plan(cfg)
	for _, s := range skipped {
		fmt.Fprintf(out, "(%s left out: no URL; see -help)\n", s)
	}
	if len(contenders) == 0 {
		return fmt.Errorf("no contender to run")
	}
	defer dropData(cfg, names)
	for i := range contenders {
		bin := binary
		if contenders[i].before {
			bin = cfg.before
		}
		if contenders[i].peer {
			bin = peerBin
		}
		if err := contenders[i].start(ctx, bin, names); err != nil {
			stopAll(contenders)
			return err
		}
	}
	defer stopAll(contenders)

	defer startMeters(ctx, cfg, contenders)()
	load0 := loadAverage()
	results, err := measure(ctx, cfg, contenders)
	if err != nil {
		return err
	}
	load1 := loadAverage()
	report(out, cfg, contenders, results, load0, load1)
	reportBackend(out, contenders, results)
	reportPeers(out, cfg, contenders, results)
	return nil
}
