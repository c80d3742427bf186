package bench

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestShedServer is a ShedServer on a real loopback TCP listener.
func newTestShedServer(t *testing.T, slots int, service time.Duration) string {
	t.Helper()
	srv := httptest.NewServer(NewShedServer(slots, service, 0))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestStormSharedDefaultClientFailsNoCaller(t *testing.T) {
	t.Parallel()
	// 150 callers of which the server sheds 142 once each (counted, not
	// timed, so load cannot change it): 142 retries, more than a bucket
	// of 100 holds, so the budget, not only the backoff, is exercised.
	const callers, served = 150, 8
	storm := func(c StormContender) StormResult {
		cfg := StormConfig{URL: newFirstRefusalServer(t, served), Callers: callers, Timeout: 30 * time.Second}
		res, err := RunStorm(context.Background(), cfg, c)
		require.NoError(t, err)
		return res
	}
	for _, c := range []StormContender{
		IdemContender("idem default, Begin/Do", false, nil),
		IdemContender("idem default, Transport", true, nil),
	} {
		res := storm(c)
		t.Logf("%s: %.2f attempts per caller, makespan %s", c.Name, res.AttemptsPerCaller(), res.Makespan)
		assert.Zero(t, res.Failed, c.Name)
		assert.Equal(t, 2*callers-served, res.Attempts, "%s: one retry per shed caller", c.Name)
	}
	// The same herd through the fixed bucket that was the default: 100
	// tokens and a tenth of one per success grant at most 112 of the 142
	// retries, at any speed, so it fails callers where the default does
	// not.
	res := storm(fixedBucketContender(t))
	t.Logf("fixed bucket: %d callers failed", res.Failed)
	assert.GreaterOrEqual(t, res.Failed, 30, "the herd asks more than a fixed bucket grants")
}

// fixedBucketContender is the storm's contender with idem's fixed bucket.
func fixedBucketContender(t *testing.T) StormContender {
	t.Helper()
	for _, c := range StormContenders() {
		if strings.Contains(c.Name, "fixed bucket") {
			return c
		}
	}
	t.Fatal("no fixed-bucket contender")
	return StormContender{}
}

func TestStormOutageSharedDefaultClientStaysUnder1_2(t *testing.T) {
	t.Parallel()
	url := newTestShedServer(t, 2, 10*time.Millisecond)
	cfg := StormOutageConfig{URL: url, Rate: 2000, Duration: time.Second, Adapted: 300 * time.Millisecond}
	res, err := RunStormOutage(context.Background(), cfg, IdemContender("idem default, Begin/Do", false, nil))
	require.NoError(t, err)
	t.Logf("amplification %.3f, adapted %.3f", res.Amplification(), res.AdaptedAmplification())
	require.Equal(t, 2000, res.Callers)
	// 100 tokens at the start, at most 150 more owed on patience, 10 a
	// second: 2000 calls make at most 2000 + 260 attempts.
	assert.LessOrEqual(t, res.Amplification(), 1.2)
	assert.LessOrEqual(t, res.AdaptedAmplification(), 1.1)
}

func TestStormPlainLoopWithoutBudgetRetriesEveryCall(t *testing.T) {
	t.Parallel()
	url := newTestShedServer(t, 1, time.Millisecond)
	c := StormContenders()[2] // exponential, no jitter
	require.Equal(t, "exponential, no jitter", c.Name)
	cfg := StormOutageConfig{URL: url, Rate: 200, Duration: 100 * time.Millisecond}
	res, err := RunStormOutage(context.Background(), cfg, c)
	require.NoError(t, err)
	assert.Equal(t, 20, res.Callers)
	assert.Equal(t, 5.0, res.Amplification(), "every call makes its 5 attempts")
}

func TestStormContendersStartAfresh(t *testing.T) {
	t.Parallel()
	url := newTestShedServer(t, 1, time.Millisecond)
	fixed := fixedBucketContender(t)
	cfg := StormOutageConfig{URL: url, Rate: 1000, Duration: 200 * time.Millisecond}
	for run := range 2 {
		res, err := RunStormOutage(context.Background(), cfg, fixed)
		require.NoError(t, err)
		assert.Equal(t, 300, res.Attempts, "run %d: 200 calls and the bucket's 100 retries", run)
	}
}

func TestStormRefusesOtherHosts(t *testing.T) {
	t.Parallel()
	_, err := RunStorm(context.Background(), StormConfig{URL: "http://example.com", Callers: 1}, IdemContender("x", false, nil))
	require.ErrorContains(t, err, "only http://127.0.0.1")
	_, err = RunStormOutage(context.Background(), StormOutageConfig{URL: "http://localhost:1", Rate: 1, Duration: time.Second}, IdemContender("x", false, nil))
	require.ErrorContains(t, err, "only http://127.0.0.1")
}

func TestWriteStormTables(t *testing.T) {
	t.Parallel()
	cs := []StormContender{{Name: "a", Jittered: true}, {Name: "b", Jittered: true}}
	rounds := [][]StormResult{
		{{Callers: 10, Attempts: 30, Makespan: time.Second}, {Callers: 10, Attempts: 20, Makespan: 2 * time.Second}},
		{{Callers: 10, Attempts: 30, Makespan: time.Second}, {Callers: 10, Attempts: 25, Makespan: 2 * time.Second, Failed: 1}},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteStormTable(&buf, rounds, cs, "a"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 4)
	assert.Contains(t, lines[3], "| b | 0 (0–1) | 2.25 (2.00–2.50) | 0.75 (0.67–0.83) | 2.00 (2.00–2.00) s | 2.00 (2.00–2.00) | 2.00 (2.00–2.00) |")
	require.Error(t, WriteStormTable(&buf, rounds, cs, "none"))

	// A round where every jittered contender failed callers has no
	// reference for the makespan ratio: it is left out, not divided by 0.
	buf.Reset()
	rounds = append(rounds, []StormResult{
		{Callers: 10, Attempts: 30, Makespan: time.Second, Failed: 1}, {Callers: 10, Attempts: 20, Makespan: 2 * time.Second, Failed: 1},
	})
	require.NoError(t, WriteStormTable(&buf, rounds, cs, "a"))
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	assert.Contains(t, lines[3], "| 2.00 (2.00–2.00) | 0.", "b's ratio over the two rounds that have a reference")
	buf.Reset()
	require.NoError(t, WriteStormTable(&buf, rounds[2:], cs, "a"))
	assert.Contains(t, buf.String(), "| 2.00 (2.00–2.00) | — |", "no round with a reference")

	buf.Reset()
	outages := [][]StormOutageResult{{{Callers: 10, Attempts: 11, AdaptedCallers: 5, AdaptedAttempts: 5}}}
	require.NoError(t, WriteStormOutageTable(&buf, outages, cs[:1]))
	assert.Contains(t, buf.String(), "| a | 10 | 11 (11–11) | 1.100 (1.100–1.100) | 1.000 (1.000–1.000) |")
}
