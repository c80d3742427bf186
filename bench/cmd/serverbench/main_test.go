package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlanLeavesOutStoresWithoutAURL(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags([]string{"-postgres", "", "-redis", "redis://x", "-before", "/old"})
	require.NoError(t, err)
	cs, skipped := plan(cfg)
	assert.Equal(t, []string{"postgres"}, skipped)
	var names []string
	for _, c := range cs {
		names = append(names, c.name())
	}
	assert.Equal(t, []string{
		"plain, memory", "unprotected, memory", "protected, memory",
		"unprotected, memory (before)", "protected, memory (before)",
		"unprotected, redis", "protected, redis",
		"unprotected, redis (before)", "protected, redis (before)",
	}, names)
}

func TestParseFlagsRefusesWhatCannotRun(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-rounds", "0"}, {"-conns", "0"}, {"-duration", "0s"}, {"-stores", "mysql"}, {"extra"},
	} {
		_, err := parseFlags(args)
		assert.Error(t, err, "%q", args)
	}
}

// The ratios are taken round by round: a contender's drift between
// rounds cancels out.
func TestReportTakesRatiosRoundByRound(t *testing.T) {
	t.Parallel()
	cfg := config{stores: []string{"memory"}, rounds: 2}
	cs := []*contender{{kind: kindPlain, store: "memory"}, {kind: kindUnprotected, store: "memory"}, {kind: kindProtected, store: "memory"}}
	us := time.Microsecond
	results := [][]round{
		{{1000, 10 * us, -1}, {2000, 10 * us, -1}},
		{{1000, 12 * us, -1}, {2000, 12 * us, -1}},
		{{900, 20 * us, -1}, {1600, 18 * us, -1}},
	}
	var out bytes.Buffer
	report(&out, cfg, cs, results, "1", "2")
	table := out.String()
	assert.Contains(t, table, "| protected, memory / unprotected, memory | **0.85 (0.80–0.90)** | +7.0 (+6.0–+8.0) |")
	assert.Contains(t, table, "| unprotected reference handler / plain net/http handler, memory | 1.00 (1.00–1.00) | +2.0 (+2.0–+2.0) |")
}

// One short run against real benchserver processes on the memory store.
func TestRunMeasuresRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchserver")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "benchserver")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/idemkit/idem/bench/cmd/benchserver").CombinedOutput()
	require.NoError(t, err, "%s", out)
	var table bytes.Buffer
	err = run(context.Background(), []string{"-benchserver", bin, "-stores", "memory", "-rounds", "2",
		"-duration", "100ms", "-warmup", "20ms", "-conns", "2"}, &table)
	require.NoError(t, err)
	assert.Contains(t, table.String(), "| protected, memory / unprotected, memory | **")
	assert.Equal(t, 1, strings.Count(table.String(), "| plain, memory |"))
}

func TestPlanAddsFiberPeersPerStore(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags([]string{"-postgres", "", "-redis", "redis://x", "-peers"})
	require.NoError(t, err)
	cs, _ := plan(cfg)
	var names []string
	for _, c := range cs {
		names = append(names, c.name())
	}
	assert.Equal(t, []string{
		"plain, memory", "unprotected, memory", "protected, memory",
		"fiber-unprotected, memory", "fiber-idempotency, memory",
		"unprotected, redis", "protected, redis",
		"fiber-unprotected, redis", "fiber-idempotency, redis",
	}, names)
}

// The report names the peer's version; it must be the one the peer
// module builds.
func TestPeerLibraryIsThePinnedVersion(t *testing.T) {
	t.Parallel()
	mod, err := peerModule()
	require.NoError(t, err)
	gomod, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	require.NoError(t, err)
	f := strings.Fields(peerLibrary)
	require.GreaterOrEqual(t, len(f), 2)
	assert.Contains(t, string(gomod), "\t"+f[0]+" "+strings.TrimSuffix(f[1], ",")+"\n")
}

// One short run of idem's protected server against Fiber's middleware
// on the memory store, both real processes.
func TestRunMeasuresFiberPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs benchserver and the peer server")
	}
	t.Parallel()
	var table bytes.Buffer
	err := run(context.Background(), []string{"-stores", "memory", "-peers", "-rounds", "1",
		"-duration", "100ms", "-warmup", "20ms", "-conns", "2"}, &table)
	require.NoError(t, err)
	assert.Contains(t, table.String(), "| fiber-idempotency, memory |")
	assert.Contains(t, table.String(), "| idem protected / Fiber idempotency, memory | **")
	assert.Contains(t, table.String(), "| Fiber idempotency / Fiber unprotected, memory | **")
}
