package main

import (
	"context"
	"fmt"
	"time"

	"github.com/idemkit/idem/bench"
)

// round is what one contender did in one round.
type round struct {
	perSecond float64
	// cpuPerRequest is the server process's CPU time over the round
	// divided by the requests it answered.
	cpuPerRequest time.Duration
	// backendPerRequest is its Postgres backends' CPU time over the
	// round divided by the requests; negative when not measured.
	backendPerRequest time.Duration
}

// measure warms every contender up, then runs cfg.rounds rounds; round i
// starts with contender i (mod their number), so no contender always
// follows the same one. results[c][r] is contender c in round r.
func measure(ctx context.Context, cfg config, cs []*contender) ([][]round, error) {
	for _, c := range cs {
		c.hc = bench.NewLoadClient(cfg.load.Conns)
		if cfg.warmup > 0 {
			if _, err := bench.RunLoad(ctx, c.hc, c.url+"/v1/payments", bench.LoadConfig{Conns: cfg.load.Conns, Duration: cfg.warmup}); err != nil {
				return nil, fmt.Errorf("warm-up of %s: %w", c.name(), err)
			}
		}
	}
	results := make([][]round, len(cs))
	for r := range cfg.rounds {
		for j := range cs {
			i := (r + j) % len(cs)
			res, err := measureOne(ctx, cfg.load, cs[i])
			if err != nil {
				return nil, err
			}
			results[i] = append(results[i], res)
		}
	}
	return results, nil
}

func measureOne(ctx context.Context, load bench.LoadConfig, c *contender) (round, error) {
	var backend0 map[int]time.Duration
	if c.meter != nil {
		backend0, _ = c.meter.sample(ctx)
	}
	before, err := c.cpu(ctx)
	if err != nil {
		return round{}, err
	}
	res, err := bench.RunLoad(ctx, c.hc, c.url+"/v1/payments", load)
	if err != nil {
		return round{}, fmt.Errorf("%s: %w", c.name(), err)
	}
	after, err := c.cpu(ctx)
	if err != nil {
		return round{}, err
	}
	if res.OK == 0 {
		return round{}, fmt.Errorf("%s answered no request in %v", c.name(), load.Duration)
	}
	r := round{perSecond: res.PerSecond(), cpuPerRequest: (after - before) / time.Duration(res.OK), backendPerRequest: -1}
	if backend0 != nil {
		if backend1, err := c.meter.sample(ctx); err == nil {
			r.backendPerRequest = used(backend0, backend1) / time.Duration(res.OK)
		}
	}
	return r, nil
}
