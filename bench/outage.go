package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemkit/idem"
)

// OutageConfig describes a total outage: a server that answers 503 to
// everything, and one client process offering Calls POSTs at Rate calls
// per second.
type OutageConfig struct {
	Calls int
	Rate  float64
	// Window is how many consecutive calls (by start order) each
	// amplification figure of OutageResult.Windows covers.
	Window int
}

// DefaultOutage is the outage of BENCHMARKS.md: 2000 calls at 500/s,
// amplification reported per 200 calls.
func DefaultOutage() OutageConfig { return OutageConfig{Calls: 2000, Rate: 500, Window: 200} }

// OutageResult is what the server saw.
type OutageResult struct {
	Client string
	// Offered is the number of calls made; Received the requests the
	// server got for them.
	Offered, Received int
	// Windows[i] is the amplification of calls i·Window to (i+1)·Window-1:
	// the requests they caused over the calls.
	Windows []float64
}

// Amplification is requests received per call offered, over the run.
func (r OutageResult) Amplification() float64 {
	if r.Offered == 0 {
		return 0
	}
	return float64(r.Received) / float64(r.Offered)
}

// Steady is the amplification of the last window: what the outage costs
// once any budget has run dry.
func (r OutageResult) Steady() float64 {
	if len(r.Windows) == 0 {
		return 0
	}
	return r.Windows[len(r.Windows)-1]
}

// OutageClient sends one call: a POST of body to url, retried by its own
// policy. It returns once the call has ended, whatever the outcome.
type OutageClient struct {
	Name  string
	Call  func(ctx context.Context, url string, body []byte) error
	Close func() error
}

// outageBackoff keeps the waits short so that a run takes seconds: the
// amplification depends on how many retries a call may make, not on how
// long it waits between them.
const outageBackoff = time.Millisecond

// IdemOutageClient is an idem Client with its default attempts (5) and,
// when withBudget, its default retry budget; otherwise WithBudget(nil).
func IdemOutageClient(withBudget bool) (OutageClient, error) {
	opts := []idem.Option{idem.WithBackoff(outageBackoff, 2*outageBackoff)}
	name := "idem, default budget"
	if !withBudget {
		opts = append(opts, idem.WithBudget(nil))
		name = "idem, WithBudget(nil)"
	}
	c, err := idem.New(opts...)
	if err != nil {
		return OutageClient{}, err
	}
	call := func(ctx context.Context, url string, body []byte) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		in, err := c.Begin(ctx, "", req)
		if err != nil {
			return err
		}
		resp, err := c.Do(ctx, in)
		if resp != nil {
			resp.Body.Close()
		}
		var ge *idem.GiveUpError
		if err != nil && !errors.As(err, &ge) {
			return err
		}
		return nil
	}
	return OutageClient{Name: name, Call: call, Close: c.Close}, nil
}

// RetryablehttpOutageClient is go-retryablehttp's NewClient with its
// defaults (RetryMax 4, DefaultRetryPolicy) except for shorter waits and
// no logger.
func RetryablehttpOutageClient() OutageClient {
	rc := retryablehttp.NewClient()
	rc.Logger = nil
	rc.RetryWaitMin, rc.RetryWaitMax = outageBackoff, 2*outageBackoff
	call := func(ctx context.Context, url string, body []byte) error {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodPost, url, body)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", uuid.NewString())
		resp, _ := rc.Do(req) // giving up after RetryMax is the expected end
		if resp != nil {
			resp.Body.Close()
		}
		return nil
	}
	return OutageClient{Name: "go-retryablehttp defaults", Call: call, Close: func() error { return nil }}
}

// RunOutage offers cfg.Calls calls from cl at cfg.Rate to a loopback
// server that answers every request with 503, and counts what it receives.
func RunOutage(ctx context.Context, cfg OutageConfig, cl OutageClient) (OutageResult, error) {
	if cfg.Calls < 1 || cfg.Rate <= 0 || cfg.Window < 1 {
		return OutageResult{}, fmt.Errorf("bench: outage config %+v: need calls >= 1, rate > 0, window >= 1", cfg)
	}
	var received atomic.Int64
	perCall := make([]atomic.Int64, cfg.Calls)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		if i, ok := callIndex(r, cfg.Calls); ok {
			perCall[i].Add(1)
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"type":"https://idem.dev/problems/unavailable","title":"Service unavailable","status":503}`)
	}))
	defer srv.Close()

	interval := time.Duration(float64(time.Second) / cfg.Rate)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Calls)
	for i := range cfg.Calls {
		if i > 0 {
			select {
			case <-ticker.C:
			case <-ctx.Done():
				wg.Wait()
				return OutageResult{}, ctx.Err()
			}
		}
		url := fmt.Sprintf("%s/v1/payments?call=%d", srv.URL, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cl.Call(ctx, url, []byte(`{"amount":1000,"currency":"EUR"}`)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return OutageResult{}, fmt.Errorf("bench: outage: %s: %w", cl.Name, err)
	}
	res := OutageResult{Client: cl.Name, Offered: cfg.Calls, Received: int(received.Load())}
	for start := 0; start < cfg.Calls; start += cfg.Window {
		end := min(start+cfg.Window, cfg.Calls)
		var n int64
		for i := start; i < end; i++ {
			n += perCall[i].Load()
		}
		res.Windows = append(res.Windows, float64(n)/float64(end-start))
	}
	return res, nil
}

// callIndex reads the call number the client put in the query.
func callIndex(r *http.Request, calls int) (int, bool) {
	var i int
	if _, err := fmt.Sscan(r.URL.Query().Get("call"), &i); err != nil || i < 0 || i >= calls {
		return 0, false
	}
	return i, true
}
