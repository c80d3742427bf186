package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Postgres gets a one-commit contender, reported against the unprotected
// handler and the protected server round by round.
func TestOneCommitContenderOnPostgresOnly(t *testing.T) {
	t.Parallel()
	cfg, err := parseFlags([]string{"-stores", "postgres,redis", "-postgres", "postgres://x", "-redis", "redis://x"})
	require.NoError(t, err)
	cs, _ := plan(cfg)
	var names []string
	for _, c := range cs {
		names = append(names, c.name())
	}
	assert.Equal(t, []string{"unprotected, postgres", "protected, postgres", "onecommit, postgres",
		"unprotected, redis", "protected, redis"}, names)

	us := time.Microsecond
	results := [][]round{
		{{1000, 100 * us, -1}, {2000, 100 * us, -1}},
		{{500, 300 * us, -1}, {1000, 300 * us, -1}},
		{{800, 150 * us, -1}, {1800, 160 * us, -1}},
		{{3000, 50 * us, -1}, {3000, 50 * us, -1}},
		{{1500, 80 * us, -1}, {1500, 80 * us, -1}},
	}
	var out bytes.Buffer
	report(&out, cfg, cs, results, "1", "2")
	assert.Contains(t, out.String(), "| onecommit, postgres / unprotected, postgres | **0.85 (0.80–0.90)** | +55.0 (+50.0–+60.0) |")
	assert.Contains(t, out.String(), "| onecommit, postgres / protected, postgres | **1.70 (1.60–1.80)** | -145.0 (-150.0–-140.0) |")
}
