// Command otelprom shows idem's OpenTelemetry metrics and traces: a
// Client and the server middleware record through the OpenTelemetry SDK,
// the metrics exported to Prometheus (served on /metrics with promhttp)
// and the spans printed as they end. It makes a few payments against an
// in-process reference server, with faults injected (a lost answer, a
// 503, a reused key), so retries, replays and conflicts show up.
//
//	go run ./examples/otelprom                 # then curl 127.0.0.1:9464/metrics; Ctrl-C stops
//	go run ./examples/otelprom --once          # pay, print the idem metrics scraped, exit
//
// In production, swap the span printer for an OTLP exporter; idem itself
// only depends on the OpenTelemetry API.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("otelprom", flag.ContinueOnError)
	fs.SetOutput(out)
	addr := fs.String("addr", "127.0.0.1:9464", "address of the /metrics endpoint")
	once := fs.Bool("once", false, "make the payments, print the idem metrics scraped from /metrics, and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// Metrics: the SDK's meter provider, read by the Prometheus exporter
	// into a registry of its own, served by promhttp.
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	// Traces: the SDK's tracer provider, printing each span as it ends.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(&spanPrinter{out: out}))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listening for /metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	metricsSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = metricsSrv.Serve(ln) }()
	defer metricsSrv.Close()
	metricsURL := "http://" + ln.Addr().String() + "/metrics"
	fmt.Fprintln(out, "metrics on", metricsURL)

	cleanup, err := pay(ctx, out, tp, mp)
	defer cleanup()
	if err != nil {
		return err
	}
	if *once {
		return printIdemMetrics(ctx, out, metricsURL)
	}
	fmt.Fprintln(out, "serving", metricsURL, "until interrupted")
	<-ctx.Done()
	return nil
}

// pay makes the example's payments: against the reference server with
// its faults, and against a handler behind the server middleware. cleanup
// closes the servers and the Client, whose retry budget is reported until
// then.
func pay(ctx context.Context, out io.Writer, tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider) (cleanup func(), err error) {
	var closers []func()
	cleanup = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	return cleanup, payments(ctx, out, tp, mp, &closers)
}

func payments(ctx context.Context, out io.Writer, tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider, closers *[]func()) error {
	ref, err := idemtest.Start()
	if err != nil {
		return err
	}
	*closers = append(*closers, ref.Close)

	// A handler of our own behind the idempotency middleware, so the
	// idem.server.* metrics show too. This demo has one caller, so every
	// key is in one anonymous scope, chosen explicitly.
	layer, err := server.New(server.NewMemoryStore(), server.WithAnonymous(),
		server.WithTracerProvider(tp), server.WithMeterProvider(mp))
	if err != nil {
		return err
	}
	orders := httptest.NewServer(layer.Wrap("/v1/orders", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"ord_1"}`)
	})))
	*closers = append(*closers, orders.Close)

	client, err := idem.New(idem.WithTracerProvider(tp), idem.WithMeterProvider(mp),
		idem.WithBackoffPolicy(func(int) time.Duration { return 20 * time.Millisecond }))
	if err != nil {
		return err
	}
	*closers = append(*closers, func() { _ = client.Close() })

	do := func(label, url, body string, opts ...idem.BeginOption) (*idem.Intent, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		in, err := client.Begin(ctx, "", req, opts...)
		if err != nil {
			return nil, err
		}
		resp, err := client.Do(ctx, in)
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		fmt.Fprintf(out, "%-28s status=%d replay=%v err=%v\n", label, status, idem.IsReplay(resp), err)
		return in, nil
	}

	payments := ref.URL + "/v1/payments"
	if _, err := do("payment", payments, `{"amount":1000,"currency":"EUR","reference":"otelprom-1"}`); err != nil {
		return err
	}
	ref.LoseNextResponses(1)
	lost, err := do("lost answer, server replay", payments, `{"amount":2000,"currency":"EUR","reference":"otelprom-2"}`)
	if err != nil {
		return err
	}
	if _, err := client.Do(ctx, lost); err != nil {
		return err
	}
	fmt.Fprintln(out, "same intent again           local replay")
	ref.FailNext(1, http.StatusServiceUnavailable, 0)
	if _, err := do("503 then success", payments, `{"amount":3000,"currency":"EUR","reference":"otelprom-3"}`); err != nil {
		return err
	}
	ordersURL := orders.URL + "/v1/orders"
	if _, err := do("order behind the middleware", ordersURL, `{"sku":"book"}`); err != nil {
		return err
	}
	// A duplicate sent by hand with the same key: the middleware replays.
	for range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ordersURL, strings.NewReader(`{"sku":"pen"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "otelprom-order-pen")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
	}
	fmt.Fprintln(out, "order sent twice by hand     second one replayed by the middleware")
	// The same key with another payload: 422, a key conflict on both sides.
	if _, err := do("reused key", ordersURL, `{"sku":"ink"}`, idem.WithIntentKey("otelprom-order-pen")); err != nil {
		return err
	}
	return nil
}

// printIdemMetrics scrapes url and prints the names of the idem metrics
// and of http.client.request.duration, one a line.
func printIdemMetrics(ctx context.Context, out io.Writer, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scraping %s: status %d", url, resp.StatusCode)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		name := strings.Fields(strings.TrimPrefix(line, "# TYPE "))[0]
		if strings.HasPrefix(name, "idem_") || strings.HasPrefix(name, "http_client_request_duration") {
			names[name] = true
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("no idem metric on /metrics")
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	fmt.Fprintln(out, "metrics scraped:")
	for _, n := range sorted {
		fmt.Fprintln(out, " ", n)
	}
	return nil
}

// spanPrinter is a span exporter that prints each span's name and idem
// attributes: a stand-in for an OTLP exporter.
type spanPrinter struct {
	mu  sync.Mutex
	out io.Writer
}

func (p *spanPrinter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range spans {
		var attrs []string
		for _, kv := range s.Attributes() {
			k := string(kv.Key)
			if strings.HasPrefix(k, "idem.") || k == "http.response.status_code" || k == "error.type" {
				attrs = append(attrs, k+"="+kv.Value.Emit())
			}
		}
		fmt.Fprintf(p.out, "  span %-20s %s\n", s.Name(), strings.Join(attrs, " "))
	}
	return nil
}

func (p *spanPrinter) Shutdown(context.Context) error { return nil }
