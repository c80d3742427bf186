// Command load measures the reference server's throughput from its own
// process: it drives POST /v1/payments on the protected and the
// unprotected server in alternating rounds (so machine drift hits both
// alike) and prints requests/s, medians over the rounds, and their ratio.
//
//	go run ./bench/cmd/load -protected http://127.0.0.1:18080 -unprotected http://127.0.0.1:18081
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	protected := fs.String("protected", "http://127.0.0.1:18080", "base URL of the protected server")
	unprotected := fs.String("unprotected", "http://127.0.0.1:18081", "base URL of the unprotected server")
	cfg := bench.LoadConfig{}
	fs.IntVar(&cfg.Conns, "conns", 16, "concurrent keep-alive connections")
	fs.DurationVar(&cfg.Duration, "duration", 3*time.Second, "length of one round")
	rounds := fs.Int("rounds", 5, "rounds per server, alternating")
	warmup := fs.Duration("warmup", time.Second, "unmeasured warm-up per server")
	if err := fs.Parse(args); err != nil {
		return err
	}
	targets := []struct{ name, url string }{{"protected", *protected}, {"unprotected", *unprotected}}
	hc := bench.NewLoadClient(cfg.Conns)
	for _, t := range targets {
		if _, err := bench.RunLoad(ctx, hc, t.url+"/v1/payments", bench.LoadConfig{Conns: cfg.Conns, Duration: *warmup}); err != nil {
			return err
		}
	}
	rates := map[string][]float64{}
	for range *rounds {
		for _, t := range targets {
			res, err := bench.RunLoad(ctx, hc, t.url+"/v1/payments", cfg)
			if err != nil {
				return err
			}
			rates[t.name] = append(rates[t.name], res.PerSecond())
		}
	}
	p, u := bench.Median(rates["protected"]), bench.Median(rates["unprotected"])
	fmt.Fprintf(out, "load: %d connections, %d alternating rounds of %s per server (medians)\n\n", cfg.Conns, *rounds, cfg.Duration)
	fmt.Fprintln(out, "| server | requests/s | ratio to unprotected |")
	fmt.Fprintln(out, "|---|---:|---:|")
	fmt.Fprintf(out, "| unprotected POST /v1/payments | %.0f | 1.00 |\n", u)
	fmt.Fprintf(out, "| protected POST /v1/payments (memory store) | %.0f | %.2f |\n", p, p/u)
	return nil
}
