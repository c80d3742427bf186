package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
)

// exitCode is the status main exits with for err.
func exitCode(err error) int { return exitCodeOf(err) }

func TestCheck_ExitCodes(t *testing.T) {
	t.Parallel()
	ref := idemtest.NewServer(t)
	broken, _ := nonIdempotentServer(t)
	closed := "http://" + testenv.ClosedAddr(t)
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"all pass", []string{ref.URL}, 0},
		{"a check failed", []string{broken.URL}, 1},
		{"unreachable", []string{closed}, 2},
		{"bad flag value", []string{ref.URL, "--key-format", "guid"}, 2},
		{"idem profile, provider dialect", []string{ref.URL, "--profile", "idem", "--dialect", "stripe"}, 2},
		{"unknown flag", []string{ref.URL, "--nope"}, 2},
		{"no URL", nil, 2},
		// Without a second principal the scoping check is skipped.
		{"skip without --strict", []string{ref.URL, "--header", "Authorization: Bearer solo-1"}, 0},
		{"skip with --strict", []string{ref.URL, "--header", "Authorization: Bearer solo-2", "--strict"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, _, err := runCheckCLI(t, tt.args...)
			assert.Equal(t, tt.want, exitCode(err), "err: %v\n%s", err, stdout)
		})
	}
}

func TestCheck_JSONIsADocumentWhenTheRunCannotHappen(t *testing.T) {
	t.Parallel()
	closed := "http://" + testenv.ClosedAddr(t)
	for _, args := range [][]string{
		{closed, "--json"},
		{"--json", "ftp://example.com"},
		{"--json", closed, "--bursts", "0"},
	} {
		stdout, _, err := runCheckCLI(t, args...)
		require.Error(t, err)
		assert.Equal(t, 2, exitCode(err))
		var report checkReport
		require.NoError(t, json.Unmarshal([]byte(stdout), &report), "args %q: %q", args, stdout)
		assert.NotEmpty(t, report.Error)
		assert.NotNil(t, report.Checks)
	}
}

func TestCheck_ProfileIdemShowsLevels(t *testing.T) {
	t.Parallel()
	srv, _ := adminReferenceServer(t, "admin-secret")

	stdout, stderr, err := runCheckCLI(t, srv.URL, "--profile", "idem", "--admin-token", "admin-secret",
		"--bursts", "3", "--burst-width", "8", "--json")
	require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	var report checkReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &report))
	levels := map[string]string{}
	for _, c := range report.Checks {
		levels[c.ID] = c.Level
		assert.True(t, c.Passed, "%s: %s", c.ID, c.Detail)
	}
	assert.Equal(t, idemtest.LevelMust, levels[idemtest.CheckQuotedKey])
	assert.Equal(t, idemtest.LevelShould, levels[idemtest.CheckConcurrent])
	assert.Equal(t, idemtest.LevelShould, levels[idemtest.CheckKeyReuse])
	assert.Equal(t, idemtest.LevelIdem, levels[idemtest.CheckReplayHeader])
	// The draft's advice (scoping, problem documents) is a rule of the idem profile.
	for _, id := range []string{idemtest.CheckMissingKey, idemtest.CheckInvalidKey, idemtest.CheckErrorNotStored,
		idemtest.CheckValidKeys, idemtest.CheckPrincipalScope, idemtest.CheckProblemDetails} {
		assert.Equal(t, idemtest.LevelIdem, levels[id], id)
	}
	assert.Equal(t, "idem", report.Profile)
}

func TestCheck_DialectAndKeyFormat(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ dialect, format string }{
		{"stripe", "ulid"}, {"stripe-v2", "uuid"}, {"square", "hex32"}, {"paypal", "prefixed"}, {"adyen", "uuid"},
		{"checkout", "uuid"},
	} {
		t.Run(tt.dialect, func(t *testing.T) {
			t.Parallel()
			srv := idemtest.NewServer(t, idemtest.WithDialect(tt.dialect))
			stdout, stderr, err := runCheckCLI(t, srv.URL, "--dialect", tt.dialect, "--key-format", tt.format,
				"--bursts", "3", "--burst-width", "8")
			require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.NotContains(t, stdout, "FAIL")
			assert.True(t, strings.Contains(stdout, tt.dialect+": "), stdout)
		})
	}
}
