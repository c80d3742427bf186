package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// StormOutageConfig is a total outage over real loopback HTTP: callers
// start at Rate a second for Duration, all through one shared client,
// against a ShedServer's DownPath (503 to everything).
type StormOutageConfig struct {
	// URL is the ShedServer's base URL; only 127.0.0.1 is accepted.
	URL string
	// Rate is callers started per second, for Duration.
	Rate     float64
	Duration time.Duration
	// Adapted is the end of the run whose callers show the budget once it
	// has adapted; zero means the last second.
	Adapted time.Duration
	// Timeout bounds each caller's call; zero means a minute.
	Timeout time.Duration
}

// StormOutageResult counts what the callers cost the server.
type StormOutageResult struct {
	// Contender is the strategy's name.
	Contender string
	// Callers and their Attempts over the whole run, and those of the
	// callers started in its last Adapted.
	Callers, Attempts               int
	AdaptedCallers, AdaptedAttempts int
}

// Amplification is attempts per caller over the whole run.
func (r StormOutageResult) Amplification() float64 {
	return float64(r.Attempts) / float64(max(r.Callers, 1))
}

// AdaptedAmplification is attempts per caller of the run's last part.
func (r StormOutageResult) AdaptedAmplification() float64 {
	return float64(r.AdaptedAttempts) / float64(max(r.AdaptedCallers, 1))
}

// RunStormOutage runs cfg's outage with one shared client of c.
func RunStormOutage(ctx context.Context, cfg StormOutageConfig, c StormContender) (StormOutageResult, error) {
	if cfg.Rate <= 0 || cfg.Duration <= 0 {
		return StormOutageResult{}, fmt.Errorf("bench: storm outage %+v: need rate > 0 and duration > 0", cfg)
	}
	if err := checkLoopback(cfg.URL); err != nil {
		return StormOutageResult{}, err
	}
	adapted := cfg.Adapted
	if adapted <= 0 {
		adapted = time.Second
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	callers := int(cfg.Rate * cfg.Duration.Seconds())
	if callers < 1 || callers > 1_000_000 {
		return StormOutageResult{}, fmt.Errorf("bench: storm outage: %d callers: need 1 to a million", callers)
	}
	rt := newCountingTransport(callers)
	defer rt.close()
	call, closeClient, err := c.New(rt)
	if err != nil {
		return StormOutageResult{}, fmt.Errorf("bench: storm outage: %s: %w", c.Name, err)
	}
	defer closeClient()

	interval := time.Duration(float64(time.Second) / cfg.Rate)
	firstAdapted := callers - int(cfg.Rate*adapted.Seconds())
	start := time.Now()
	var wg sync.WaitGroup
	for i := range callers {
		// Pace by the clock, not by ticks, so a slow tick never thins
		// the offered load.
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				wg.Wait()
				return StormOutageResult{}, ctx.Err()
			}
		}
		u := fmt.Sprintf("%s%s?caller=%d", cfg.URL, DownPath, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			call(cctx, u)
		}()
	}
	wg.Wait()

	res := StormOutageResult{Contender: c.Name, Callers: callers, Attempts: int(rt.total.Load())}
	for i := max(firstAdapted, 0); i < callers; i++ {
		res.AdaptedCallers++
		res.AdaptedAttempts += int(rt.perCaller[i].Load())
	}
	return res, ctx.Err()
}
