package bench

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func constantStrategy(wait time.Duration) Strategy {
	return Strategy{Name: "constant", NewClient: func(func() float64) Waiter {
		return func(int, *http.Response, time.Time) time.Duration { return wait }
	}}
}

func TestRunHerdCountsEveryAttempt(t *testing.T) {
	t.Parallel()
	// 4 clients, 2 slots of 10 ms; a rejected client learns it at 1 ms and
	// comes back 20 ms later, when both slots are free again.
	cfg := HerdConfig{Clients: 4, Slots: 2, Service: 10 * time.Millisecond, RejectRTT: time.Millisecond, Seed: 1}
	res, err := RunHerd(cfg, constantStrategy(20*time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, 6, res.Attempts, "4 first attempts, 2 retries")
	assert.Equal(t, 31*time.Millisecond, res.Makespan, "retries arrive at 21 ms and are served for 10 ms")
	assert.Equal(t, 10*time.Millisecond, res.P50)
	assert.Equal(t, 31*time.Millisecond, res.P99)
}

func TestRunHerdNoJitterRetriesInLockstep(t *testing.T) {
	t.Parallel()
	cfg := HerdConfig{Clients: 30, Slots: 10, Service: 50 * time.Millisecond, RejectRTT: time.Millisecond, Seed: 1}
	var exponential Strategy
	for _, s := range HerdStrategies() {
		if s.Name == "exponential, no jitter" {
			exponential = s
		}
	}
	require.NotNil(t, exponential.NewClient)
	res, err := RunHerd(cfg, exponential)
	require.NoError(t, err)
	// Every round all remaining clients arrive together and 10 get in:
	// 30 + 20 + 10 attempts.
	assert.Equal(t, 60, res.Attempts)
}

func TestRunHerdIsDeterministic(t *testing.T) {
	t.Parallel()
	cfg := DefaultHerd()
	for _, s := range HerdStrategies()[:4] { // idem's own, all seeded
		a, err := RunHerd(cfg, s)
		require.NoError(t, err)
		b, err := RunHerd(cfg, s)
		require.NoError(t, err)
		assert.Equal(t, a, b, s.Name)
		assert.GreaterOrEqual(t, a.Attempts, cfg.Clients, s.Name)
		assert.GreaterOrEqual(t, a.Makespan, time.Duration(cfg.Clients/cfg.Slots)*cfg.Service, s.Name)
	}
}

func TestRunHerdRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	cfg := HerdConfig{Clients: 2, Slots: 1, Service: 10 * time.Millisecond, RetryAfter: 1500 * time.Millisecond, Seed: 1}
	for _, s := range HerdStrategies() {
		if s.Name == "retryablehttp LinearJitterBackoff" {
			continue // it ignores Retry-After by design
		}
		res, err := RunHerd(cfg, s)
		require.NoError(t, err)
		assert.Equal(t, 3, res.Attempts, s.Name)
		assert.GreaterOrEqual(t, res.Makespan, 2*time.Second, "%s: Retry-After rounds up to 2 s", s.Name)
	}
}

func TestRunHerdStopsAStrategyThatNeverGetsThrough(t *testing.T) {
	t.Parallel()
	cfg := HerdConfig{Clients: 2, Slots: 1, Service: time.Second, MaxAttemptsPerClient: 5}
	_, err := RunHerd(cfg, constantStrategy(0))
	require.ErrorContains(t, err, "5 attempts")
}

func TestRunHerdRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := RunHerd(HerdConfig{}, constantStrategy(0))
	require.Error(t, err)
	assert.ErrorContains(t, err, "clients 0")
	assert.ErrorContains(t, err, "slots 0")
	assert.ErrorContains(t, err, "service 0s")
}
