package bench

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runTestOutage(t *testing.T, cl OutageClient, err error) OutageResult {
	t.Helper()
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	res, err := RunOutage(context.Background(), OutageConfig{Calls: 150, Rate: 5000, Window: 50}, cl)
	require.NoError(t, err)
	require.Equal(t, 150, res.Offered)
	require.Len(t, res.Windows, 3)
	return res
}

func TestOutageIdemBudgetCapsRetries(t *testing.T) {
	t.Parallel()
	cl, err := IdemOutageClient(true)
	start := time.Now()
	res := runTestOutage(t, cl, err)
	elapsed := time.Since(start)
	// The default budget holds 100 retries, lends at most 150 more (its
	// patience debt) while its patience (500 ms) has not yet called the
	// server down, and refills only by its floor of 10 a second (a
	// fraction of one in a 30 ms run, more on a loaded machine that
	// stretches the run): 150 first attempts plus at most 250 retries and
	// the floor's share.
	floor := int(math.Ceil(elapsed.Seconds() * 10))
	assert.GreaterOrEqual(t, res.Received, 250)
	assert.LessOrEqual(t, res.Received, 400+floor+3, "run took %s", elapsed)
}

func TestOutageIdemWithoutBudgetMakesEveryAttempt(t *testing.T) {
	t.Parallel()
	cl, err := IdemOutageClient(false)
	res := runTestOutage(t, cl, err)
	assert.Equal(t, 750, res.Received, "5 attempts per call")
	assert.Equal(t, []float64{5, 5, 5}, res.Windows)
	assert.Equal(t, 5.0, res.Steady())
}

func TestOutageRetryablehttpDefaults(t *testing.T) {
	t.Parallel()
	res := runTestOutage(t, RetryablehttpOutageClient(), nil)
	assert.Equal(t, 750, res.Received, "RetryMax 4: 5 attempts per call")
}

func TestRunOutageRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := RunOutage(context.Background(), OutageConfig{}, RetryablehttpOutageClient())
	require.Error(t, err)
}
