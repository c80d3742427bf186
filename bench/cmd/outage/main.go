// Command outage measures retry amplification in a total outage: a
// loopback server answers 503 to every request while one client process
// offers calls at a steady rate, and the table shows requests received
// per call offered, for idem with and without its retry budget and for
// go-retryablehttp's defaults. Runs are repeated and the medians shown.
//
//	go run ./bench/cmd/outage -calls 2000 -rate 500 -runs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/idemkit/idem/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "outage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg := bench.DefaultOutage()
	fs := flag.NewFlagSet("outage", flag.ContinueOnError)
	fs.IntVar(&cfg.Calls, "calls", cfg.Calls, "calls offered per run")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "calls started per second")
	fs.IntVar(&cfg.Window, "window", cfg.Window, "calls per amplification window")
	runs := fs.Int("runs", 3, "runs per client; the table shows medians")
	if err := fs.Parse(args); err != nil {
		return err
	}
	clients := []func() (bench.OutageClient, error){
		func() (bench.OutageClient, error) { return bench.IdemOutageClient(true) },
		func() (bench.OutageClient, error) { return bench.IdemOutageClient(false) },
		func() (bench.OutageClient, error) { return bench.RetryablehttpOutageClient(), nil },
	}
	fmt.Fprintf(out, "outage: %d calls at %.0f/s per run, every request answered 503, %d runs (medians)\n\n", cfg.Calls, cfg.Rate, *runs)
	fmt.Fprintln(out, "| client | offered | received | amplification (whole run) | first window | last window (steady) |")
	fmt.Fprintln(out, "|---|---:|---:|---:|---:|---:|")
	for _, newClient := range clients {
		var name string
		var received, whole, first, last []float64
		for range *runs {
			cl, err := newClient()
			if err != nil {
				return err
			}
			res, err := bench.RunOutage(ctx, cfg, cl)
			_ = cl.Close()
			if err != nil {
				return err
			}
			name = res.Client
			received = append(received, float64(res.Received))
			whole = append(whole, res.Amplification())
			first = append(first, res.Windows[0])
			last = append(last, res.Steady())
		}
		fmt.Fprintf(out, "| %s | %d | %.0f | %.2f | %.2f | %.2f |\n", name, cfg.Calls,
			bench.Median(received), bench.Median(whole), bench.Median(first), bench.Median(last))
	}
	fmt.Fprintf(out, "\nA window is %d consecutive calls, by start order.\n", cfg.Window)
	return nil
}
