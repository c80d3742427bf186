package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// A refund the provider refused: a person refunds by hand and records
// it; the program's Fail then finishes the run, compensated.
func TestRunsResolve_CompensationThatCouldNotBeProven(t *testing.T) {
	t.Parallel()
	path, srv := sagaKeystore(t)

	_, stderr, code := runRunsCLI(t, nil, "resolve", "tenant-a@order-3", "charge", "--failed", "--by", "ops", "--keystore", path)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "--failed on step charge of run tenant-a@order-3 records nothing")

	stdout, stderr, code := runRunsCLI(t, nil, "resolve", "order-3", "charge", "--scope", "tenant-a", "--succeeded",
		"--by", "ops@example", "--note", "refunded by hand, ticket 9", "--keystore", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "recorded step charge of run tenant-a@order-3 as undone (by ops@example: refunded by hand, ticket 9)\n")
	assert.Contains(t, stdout, "run tenant-a@order-3 is compensating\n")

	_, stderr, code = runRunsCLI(t, nil, "resolve", "tenant-a@order-3", "charge", "--succeeded", "--by", "bob", "--keystore", path)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "step charge of run tenant-a@order-3 is undone already (resolved by ops@example: refunded by hand, ticket 9)")

	// The program takes the run up and finishes undoing it.
	c := sagaClient(t, idem.WithBoltStore(path, nil))
	s, err := saga.New(c, saga.WithScope("tenant-a"))
	require.NoError(t, err)
	r, err := s.Resume(t.Context(), "order-3")
	require.NoError(t, err)
	require.NoError(t, r.Fail(t.Context(), nil))
	assert.Equal(t, saga.Compensated, r.State())
	require.NoError(t, c.Close())
	assert.Zero(t, paymentsOf(srv, "refund-charge-order-3"), "the refund by hand is not made again")

	stdout, _, code = runRunsCLI(t, nil, "show", "tenant-a@order-3", "--keystore", path, "--json")
	require.Equal(t, exitOK, code)
	var d runDetail
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	assert.Equal(t, saga.Compensated, d.State)
	assert.Equal(t, "resolved by ops@example: refunded by hand, ticket 9", d.Steps[0].Resolution)
	assert.Empty(t, d.Todo)
}

// A step whose outcome stays unknown: the verdict settles its intent,
// with who and why in its audit trail.
func TestRunsResolve_StepLeftUnknown(t *testing.T) {
	t.Parallel()
	path, _ := sagaKeystore(t)
	key := saga.DeriveStepKey(nil, "", "order-2", "charge", false)

	stdout, stderr, code := runRunsCLI(t, nil, "resolve", "order-2", "charge", "--succeeded", "--by", "alice",
		"--note", "pay_123 in the dashboard", "--keystore", path, "--json")
	require.Equal(t, exitOK, code, stderr)
	var d runDetail
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	assert.Equal(t, saga.Running, d.State)
	assert.Equal(t, idem.Succeeded, d.Steps[0].IntentState)
	assert.Zero(t, d.Unsettled)

	for _, r := range readKeystore(t, path) {
		if r.Key == key {
			assert.Equal(t, keystore.Succeeded, r.State)
			require.NotEmpty(t, r.Reconciliations)
			v := r.Reconciliations[len(r.Reconciliations)-1]
			assert.Equal(t, "alice", v.By)
			assert.Equal(t, "pay_123 in the dashboard", v.Note)
		}
	}

	_, stderr, code = runRunsCLI(t, nil, "resolve", "order-2", "charge", "--failed", "--by", "bob", "--keystore", path)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "step charge of run order-2 has a known outcome (succeeded) and the run is running: nothing to resolve")
}
