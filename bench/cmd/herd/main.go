// Command herd plays the retry storm of BENCHMARKS.md on a virtual clock:
// N clients start at once against a server that serves K at a time and
// sheds the rest with 503, for every retry strategy, without and with
// Retry-After, and prints Markdown tables of medians over several seeds.
//
//	go run ./bench/cmd/herd -clients 200 -slots 10 -service 50ms -seeds 9
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idemkit/idem/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "herd:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	cfg := bench.DefaultHerd()
	fs := flag.NewFlagSet("herd", flag.ContinueOnError)
	fs.IntVar(&cfg.Clients, "clients", cfg.Clients, "clients starting at once (N)")
	fs.IntVar(&cfg.Slots, "slots", cfg.Slots, "requests the server serves at a time (K)")
	fs.DurationVar(&cfg.Service, "service", cfg.Service, "service time of one request")
	fs.DurationVar(&cfg.RejectRTT, "reject-rtt", cfg.RejectRTT, "round trip of a shed request")
	retryAfter := fs.Duration("retry-after", time.Second, "Retry-After sent with each 503 in the second table")
	seeds := fs.Int("seeds", 9, "runs per strategy; the table shows medians")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Fprintf(out, "herd: N=%d clients, K=%d slots, service %s, reject RTT %s, %d seeds (medians)\n",
		cfg.Clients, cfg.Slots, cfg.Service, cfg.RejectRTT, *seeds)
	for _, ra := range []time.Duration{0, *retryAfter} {
		c := cfg
		c.RetryAfter = ra
		title := "without Retry-After"
		if ra > 0 {
			title = fmt.Sprintf("with Retry-After: %s on every 503", ra)
		}
		rows, err := bench.RunHerdSeeds(c, *seeds, bench.HerdStrategies())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\n### %s\n\n", title)
		if err := bench.WriteHerdTable(out, rows, "exponential, no jitter"); err != nil {
			return err
		}
	}
	return nil
}
