package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
)

// settle --status is the status the program's next call replays.
func TestSettle_StatusIsReplayed(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	key := p.pending[0].Key
	_, stderr, code := runCLI(t, "intents", "settle", key, "--keystore", p.path, "--failed", "--status", "201", "--note", "n")
	assert.Equal(t, exitCannotRun, code, "--status with --failed: %s", stderr)
	_, stderr, code = runCLI(t, "intents", "settle", key, "--keystore", p.path, "--succeeded", "--status", "202", "--note", "n")
	assert.Equal(t, exitCannotRun, code, "202 is no outcome: %s", stderr)

	_, stderr, code = runCLI(t, "intents", "settle", key, "--keystore", p.path, "--succeeded", "--status", "201", "--note", "pay_2 in the dashboard, created")
	require.Equal(t, exitOK, code, stderr)
	stdout, _, code := runCLI(t, "intents", "show", key, "--keystore", p.path)
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "Response 201 Created")
	assert.Contains(t, stdout, "Idem-Settlement: manual")

	client, err := idem.New(idem.WithBoltStore(p.path, nil))
	require.NoError(t, err)
	defer client.Close()
	in, err := client.Resume(t.Context(), key)
	require.NoError(t, err)
	resp, err := client.Do(t.Context(), in)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "manual", resp.Header.Get(idem.SettlementHeader))
}
