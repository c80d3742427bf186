package bench

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// StormConfig is one retry storm over real loopback HTTP: Callers callers
// released at the same instant, all through one shared client, against a
// ShedServer at URL.
type StormConfig struct {
	// URL is the ShedServer's base URL; only 127.0.0.1 is accepted.
	URL string
	// Callers is N.
	Callers int
	// Timeout bounds each caller's call; zero means a minute.
	Timeout time.Duration
}

// StormResult is what one contender made of one storm.
type StormResult struct {
	// Contender is the strategy's name.
	Contender string
	// Callers started, and how many of them ended without a success.
	Callers, Failed int
	// Attempts counts every request that left the shared client.
	Attempts int
	// Makespan is when the last caller ended; P50 and P99 are
	// percentiles of the callers' end times, from the release.
	Makespan, P50, P99 time.Duration
}

// AttemptsPerCaller is Attempts over Callers.
func (r StormResult) AttemptsPerCaller() float64 {
	return float64(r.Attempts) / float64(max(r.Callers, 1))
}

// RunStorm releases cfg.Callers callers at once through one client of c
// and waits for every one of them.
func RunStorm(ctx context.Context, cfg StormConfig, c StormContender) (StormResult, error) {
	if cfg.Callers < 1 {
		return StormResult{}, fmt.Errorf("bench: storm: callers %d: need at least 1", cfg.Callers)
	}
	if err := checkLoopback(cfg.URL); err != nil {
		return StormResult{}, err
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	rt := newCountingTransport(cfg.Callers)
	defer rt.close()
	call, closeClient, err := c.New(rt)
	if err != nil {
		return StormResult{}, fmt.Errorf("bench: storm: %s: %w", c.Name, err)
	}
	defer closeClient()

	ends := make([]time.Duration, cfg.Callers)
	failed := make([]bool, cfg.Callers)
	release := make(chan struct{})
	var start time.Time
	var wg sync.WaitGroup
	for i := range cfg.Callers {
		u := fmt.Sprintf("%s%s?caller=%d", cfg.URL, ShedPath, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			failed[i] = !call(cctx, u)
			ends[i] = time.Since(start)
		}()
	}
	start = time.Now()
	close(release)
	wg.Wait()

	res := StormResult{Contender: c.Name, Callers: cfg.Callers, Attempts: int(rt.total.Load())}
	for _, f := range failed {
		if f {
			res.Failed++
		}
	}
	res.Makespan = Percentile(ends, 100)
	res.P50 = Percentile(ends, 50)
	res.P99 = Percentile(ends, 99)
	return res, ctx.Err()
}

// checkLoopback refuses any server but 127.0.0.1: the storm is meant to
// hurt no one else's server.
func checkLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("bench: storm: server URL: %w", err)
	}
	if u.Scheme != "http" || u.Hostname() != "127.0.0.1" {
		return fmt.Errorf("bench: storm: server URL %q: only http://127.0.0.1 is allowed", raw)
	}
	return nil
}

// countingTransport is a fresh connection pool, sized for every caller at
// once, that counts the requests sent through it, in total and per caller
// (the caller query parameter).
type countingTransport struct {
	base      *http.Transport
	total     atomic.Int64
	perCaller []atomic.Int64
}

func newCountingTransport(callers int) *countingTransport {
	base := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        callers,
		MaxIdleConnsPerHost: callers,
		IdleConnTimeout:     30 * time.Second,
	}
	return &countingTransport{base: base, perCaller: make([]atomic.Int64, callers)}
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.total.Add(1)
	if i, err := strconv.Atoi(r.URL.Query().Get("caller")); err == nil && i >= 0 && i < len(t.perCaller) {
		t.perCaller[i].Add(1)
	}
	return t.base.RoundTrip(r)
}

func (t *countingTransport) close() { t.base.CloseIdleConnections() }
