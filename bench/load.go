package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

// LoadConfig describes one closed-loop load run: Conns workers, each on
// its own keep-alive connection, send POST /v1/payments back to back for
// Duration, every request with a fresh Idempotency-Key.
type LoadConfig struct {
	Conns    int
	Duration time.Duration
}

// LoadResult is what one run achieved.
type LoadResult struct {
	// OK counts 201 answers; Failed every other answer or error.
	OK, Failed int
	Elapsed    time.Duration
}

// PerSecond is the throughput of successful requests.
func (r LoadResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

const loadPayment = `{"amount":1000,"currency":"EUR","reference":"load"}`

// NewLoadClient returns an HTTP client that keeps one idle connection per
// worker, so no request waits for a dial once the run is warm.
func NewLoadClient(conns int) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = conns
	t.MaxIdleConnsPerHost = conns
	t.MaxConnsPerHost = conns
	return &http.Client{Transport: t, Timeout: 30 * time.Second}
}

// RunLoad drives url (the full URL of the payments route) with cfg using
// hc. A run with failures still returns its counts, with an error naming
// the first failure.
func RunLoad(ctx context.Context, hc *http.Client, url string, cfg LoadConfig) (LoadResult, error) {
	if cfg.Conns < 1 || cfg.Duration <= 0 {
		return LoadResult{}, fmt.Errorf("bench: load config %+v: need conns >= 1 and a positive duration", cfg)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var ok, failed atomic.Int64
	var firstErr error
	var once sync.Once
	fail := func(err error) {
		failed.Add(1)
		once.Do(func() { firstErr = err })
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range cfg.Conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := postPayment(ctx, hc, url)
				switch {
				case err == nil:
					ok.Add(1)
				case ctx.Err() != nil:
					return // the run ended mid-request; not a failure
				default:
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	res := LoadResult{OK: int(ok.Load()), Failed: int(failed.Load()), Elapsed: time.Since(start)}
	if firstErr != nil {
		return res, fmt.Errorf("bench: load on %s: %d failures, first: %w", url, res.Failed, firstErr)
	}
	return res, nil
}

var errUnexpectedStatus = errors.New("unexpected status")

func postPayment(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(loadPayment))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer load-tenant")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("%w %d", errUnexpectedStatus, resp.StatusCode)
	}
	return nil
}
