// Command resume runs a batch of payments that survives being killed:
// every payment is a named intent, so a rerun finds the same intents with
// the same keys, settles what is pending and skips what is done.
//
// Start a reference server, then run the batch, kill it half way and run
// it again:
//
//	go build -o bin/idem ./cmd/idem && go build -o bin/resume ./examples/resume
//	bin/idem serve &
//	bin/resume --count 20 --crash-after 7   # SIGKILLs itself as the 7th payment's answer arrives
//	bin/resume --count 20                   # 20 payments on the server, never 21
//
// --delay paces the payments so the batch can be killed by hand (Ctrl-C,
// or kill -9 of the built binary: kill -9 of `go run` would leave the
// program running).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/idemkit/idem"
)

type options struct {
	server   string
	keystore string
	count    int
	token    string
	batch    string
	// delay is the pause before each payment is sent.
	delay time.Duration
	// crashAfter, when positive, SIGKILLs the process as the answer to
	// the crashAfter-th payment sent by this run arrives, before the
	// client records it: the server has charged, the keystore says pending.
	crashAfter int
}

func main() {
	var o options
	flag.StringVar(&o.server, "server", "http://127.0.0.1:8080", "base URL of the payments API")
	flag.StringVar(&o.keystore, "keystore", "./resume.db", "path of the bbolt keystore")
	flag.IntVar(&o.count, "count", 10, "number of payments in the batch")
	flag.StringVar(&o.token, "token", "tok_resume_demo", "bearer token (never written to the keystore)")
	flag.StringVar(&o.batch, "batch", "batch-42", "batch name; intents are named <batch>/payment-<i>")
	flag.DurationVar(&o.delay, "delay", 0, "pause before each payment, e.g. 300ms, to leave time to kill the batch by hand")
	flag.IntVar(&o.crashAfter, "crash-after", 0, "SIGKILL this process as the answer to the Nth payment sent arrives, before it is recorded (0: never)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "resume:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, o options) error {
	if o.count < 1 {
		return fmt.Errorf("--count must be at least 1, got %d", o.count)
	}
	if o.delay < 0 || o.crashAfter < 0 {
		return errors.New("--delay and --crash-after must not be negative")
	}
	api, err := url.Parse(o.server)
	if err != nil || api.Host == "" {
		return fmt.Errorf("--server %q: want a URL such as http://127.0.0.1:8080", o.server)
	}
	client, err := idem.New(
		idem.WithBoltStore(o.keystore, nil),
		idem.WithHTTPClient(&http.Client{Transport: crashAfter(http.DefaultTransport, o.crashAfter, killSelf)}),
		// Credentials for intents resumed from the keystore, which never
		// holds them.
		idem.WithRequestEditor(tokenEditor(api, o.token)),
	)
	if errors.Is(err, idem.ErrLocked) {
		return fmt.Errorf("%s is in use by another run: %w", o.keystore, err)
	}
	if err != nil {
		return err
	}
	defer client.Close()

	// Phase one: every intent of the batch is born and persisted, with its
	// key, before the first payment is sent. A run killed at any point
	// leaves the whole batch in the keystore.
	intents := make([]*idem.Intent, o.count)
	for i := range o.count {
		name := fmt.Sprintf("%s/payment-%d", o.batch, i)
		req, err := paymentRequest(o, i)
		if err != nil {
			return err
		}
		if intents[i], err = client.Begin(ctx, name, req); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}

	// Phase two: send each with its own key; finished ones replay locally.
	var paid, replayed, failed int
	for _, in := range intents {
		if o.delay > 0 && !in.State.Settled() {
			select {
			case <-time.After(o.delay):
			case <-ctx.Done():
			}
		}
		resp, err := client.Do(ctx, in)
		switch {
		case err != nil:
			failed++
			fmt.Fprintf(out, "%-24s key %s  not settled: %v\n", in.Name, in.Key, err)
			if ctx.Err() != nil {
				return summary(out, paid, replayed, failed, o.count)
			}
		case idem.IsLocalReplay(resp):
			replayed++
			fmt.Fprintf(out, "%-24s key %s  %d (replay: paid before)\n", in.Name, in.Key, resp.StatusCode)
		case idem.IsReplay(resp):
			replayed++
			fmt.Fprintf(out, "%-24s key %s  %d (server replay: paid before, its answer lost)\n", in.Name, in.Key, resp.StatusCode)
		default:
			paid++
			fmt.Fprintf(out, "%-24s key %s  %d paid\n", in.Name, in.Key, resp.StatusCode)
		}
	}
	return summary(out, paid, replayed, failed, o.count)
}

// tokenEditor adds the bearer token to requests for the API's origin
// only: the editor also sees the polls of a 202's operation, which may
// live on another origin that must never get the token.
func tokenEditor(api *url.URL, token string) func(context.Context, *http.Request) error {
	return func(_ context.Context, r *http.Request) error {
		if sameOrigin(r.URL, api) {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

// sameOrigin reports whether a and b share scheme, host (any case) and
// port, the default ports (http 80, https 443) made explicit.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		portOf(a) == portOf(b)
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

func summary(out io.Writer, paid, replayed, failed, count int) error {
	fmt.Fprintf(out, "\n%d paid now, %d paid by an earlier run, %d not settled, of %d\n", paid, replayed, failed, count)
	if failed > 0 {
		fmt.Fprintln(out, "rerun to settle the rest with the same keys")
	}
	return nil
}

func paymentRequest(o options, i int) (*http.Request, error) {
	body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": "%s-%d"}`, 1000+i, o.batch, i)
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(o.server, "/")+"/v1/payments", strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", o.server, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.token)
	return req, nil
}
