// Command load measures the reference server's throughput from its own
// process: it drives POST /v1/payments on every unprotected and protected
// server in alternating rounds (so machine drift hits all alike) and
// prints requests/s, medians over the rounds, and each one's ratio to the
// first unprotected server and to the unprotected server on the same
// store.
//
//	go run ./bench/cmd/load -unprotected memory=http://127.0.0.1:18081 \
//		-protected memory=http://127.0.0.1:18080 -protected postgres=http://127.0.0.1:18082
//
// A -protected or -unprotected value is label=url; the label names the
// store in the table and may itself contain '=' (a bare url is labelled
// "memory"). Servers with the same label are compared with each other.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/idemkit/idem/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// target is one server under load.
type target struct{ label, url string }

// targetsFlag collects the -protected values.
type targetsFlag []target

func (t *targetsFlag) String() string {
	parts := make([]string, len(*t))
	for i, x := range *t {
		parts[i] = x.label + "=" + x.url
	}
	return strings.Join(parts, " ")
}

func (t *targetsFlag) Set(v string) error {
	// The label ends where the URL starts, so it may hold '=' itself
	// (say "postgres, pool_max_conns=16").
	label, url := "memory", v
	if i := strings.Index(v, "=http"); i >= 0 {
		label, url = v[:i], v[i+1:]
	}
	if label == "" || url == "" {
		return fmt.Errorf("want label=url, got %q", v)
	}
	*t = append(*t, target{label, url})
	return nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	var protected, unprotected targetsFlag
	fs.Var(&protected, "protected", "`label=url` of a protected server, labelled by its store; repeatable (default memory=http://127.0.0.1:18080)")
	fs.Var(&unprotected, "unprotected", "`label=url` of an unprotected server, labelled by its store; repeatable (default memory=http://127.0.0.1:18081)")
	cfg := bench.LoadConfig{}
	fs.IntVar(&cfg.Conns, "conns", 16, "concurrent keep-alive connections")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "length of one round")
	rounds := fs.Int("rounds", 5, "rounds per server, alternating")
	warmup := fs.Duration("warmup", time.Second, "unmeasured warm-up per server")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: need at least 1", *rounds)
	}
	if len(protected) == 0 {
		protected = targetsFlag{{"memory", "http://127.0.0.1:18080"}}
	}
	if len(unprotected) == 0 {
		unprotected = targetsFlag{{"memory", "http://127.0.0.1:18081"}}
	}
	targets := append(append([]target{}, unprotected...), protected...)

	hc := bench.NewLoadClient(cfg.Conns)
	for _, t := range targets {
		if _, err := bench.RunLoad(ctx, hc, t.url+"/v1/payments", bench.LoadConfig{Conns: cfg.Conns, Duration: *warmup}); err != nil {
			return err
		}
	}
	rates := make([][]float64, len(targets))
	for range *rounds {
		for i, t := range targets {
			res, err := bench.RunLoad(ctx, hc, t.url+"/v1/payments", cfg)
			if err != nil {
				return err
			}
			rates[i] = append(rates[i], res.PerSecond())
		}
	}

	// Each server is compared with the first unprotected one (the plain
	// handler, normally on the memory store) and, when there is one, with
	// the unprotected handler on its own store: the cost of the
	// idempotency layer on top of a handler that already writes there.
	unprotectedRate := map[string]float64{}
	for i, t := range unprotected {
		unprotectedRate[t.label] = bench.Median(rates[i])
	}
	base := bench.Median(rates[0])
	fmt.Fprintf(out, "load: %d connections, %d alternating rounds of %s per server (medians, and the range over the rounds)\n\n", cfg.Conns, *rounds, cfg.Duration)
	fmt.Fprintf(out, "| server | requests/s | range | ratio to unprotected %s | ratio to unprotected, same store |\n", unprotected[0].label)
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|")
	for i, t := range targets {
		name := "unprotected POST /v1/payments, store: " + t.label
		if i >= len(unprotected) {
			name = "protected POST /v1/payments, store: " + t.label
		}
		med := bench.Median(rates[i])
		lo, hi := minMax(rates[i])
		same := "—"
		if u, ok := unprotectedRate[t.label]; ok {
			same = fmt.Sprintf("%.2f", med/u)
		}
		fmt.Fprintf(out, "| %s | %.0f | %.0f–%.0f | %.2f | %s |\n", name, med, lo, hi, med/base, same)
	}
	return nil
}

func minMax(xs []float64) (lo, hi float64) {
	lo, hi = xs[0], xs[0]
	for _, x := range xs[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}
