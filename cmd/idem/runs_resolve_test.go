package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
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

// compensationLost writes run order-4 into a new bbolt keystore: its
// charge succeeded, its shipment was refused, and the answer to its
// refund was lost (the server made it), so the run is compensating with
// the refund's intent pending.
func compensationLost(t *testing.T) (string, *idemtest.Server) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	srv := idemtest.NewServer(t)
	c := sagaClient(t, idem.WithBoltStore(path, &keystore.BoltOptions{NoSync: true}))
	defer c.Close()
	ctx := t.Context()
	s, err := saga.New(c)
	require.NoError(t, err)
	r, err := s.Run(ctx, "order-4")
	require.NoError(t, err)
	for _, st := range []struct {
		name, ref string
		refuse    bool
	}{{"charge", "charge-order-4", false}, {"ship", "ship-order-4", true}} {
		req, err := sagaPayment(srv.URL, 4000, st.ref)
		require.NoError(t, err)
		if st.refuse {
			srv.FailNext(1, http.StatusUnprocessableEntity, 0)
		}
		resp, err := r.Step(ctx, st.name, req, sagaRefund(srv.URL))
		if resp != nil {
			resp.Body.Close()
		}
		if st.refuse {
			require.ErrorIs(t, err, idem.ErrFinalFailure)
			srv.LoseNextResponses(1)
			require.ErrorIs(t, r.Fail(ctx, err), saga.ErrStepUnknown)
		} else {
			require.NoError(t, err)
		}
	}
	require.Equal(t, saga.Compensating, r.State())
	require.Equal(t, 1, paymentsOf(srv, "refund-charge-order-4"))
	return path, srv
}

// A refund whose answer was lost: resume proves it with a replay (one
// refund), and the program's Fail then finishes the run.
func TestRunsResume_LostCompensation(t *testing.T) {
	t.Parallel()
	path, srv := compensationLost(t)
	stdout, _, code := runRunsCLI(t, nil, "show", "order-4", "--keystore", path)
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "step charge: the outcome of its compensation is unknown (intent pending): `idem runs resume order-4` resends it")

	stdout, stderr, code := runRunsCLI(t, nil, "resume", "order-4", "--keystore", path, "--token", testToken, "--no-progress")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `(?m)^succeeded  \S+  saga/order-4/charge/compensation  201 Created$`, stdout)
	assert.Contains(t, stdout, "run order-4 is compensating\n")
	assert.Equal(t, 1, paymentsOf(srv, "refund-charge-order-4"), "a replay, not a second refund")
}

// A refund whose answer was lost, made by hand meanwhile: the verdict
// settles its intent, so no resend makes it a second time, and records
// the step undone.
func TestRunsResolve_LostCompensationUndoneByHand(t *testing.T) {
	t.Parallel()
	path, srv := compensationLost(t)
	stdout, stderr, code := runRunsCLI(t, nil, "resolve", "order-4", "charge", "--succeeded", "--by", "ops", "--keystore", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "recorded step charge of run order-4 as undone (by ops: --succeeded, given with idem runs resolve)")

	stdout, stderr, code = runRunsCLI(t, nil, "resume", "order-4", "--keystore", path, "--token", testToken, "--json")
	require.Equal(t, exitOK, code, stderr)
	var rep runsResumeReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	assert.Empty(t, rep.Intents, "the settled refund is not resent")
	require.Len(t, rep.Run.Steps, 2)
	require.NotNil(t, rep.Run.Steps[0].Compensation)
	assert.Equal(t, idem.Succeeded, rep.Run.Steps[0].Compensation.State)
	assert.True(t, rep.Run.Steps[0].Undone)
	assert.Equal(t, 1, paymentsOf(srv, "refund-charge-order-4"))
}

// --failed on a refund whose answer was lost: its intent is settled as
// failed, and the step waits for a person to undo it by hand.
func TestRunsResolve_LostCompensationFailed(t *testing.T) {
	t.Parallel()
	path, _ := compensationLost(t)
	stdout, stderr, code := runRunsCLI(t, nil, "resolve", "order-4", "charge", "--failed", "--by", "ops", "--note", "no refund in the ledger", "--keystore", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "settled the compensation of step charge of run order-4 as failed (by ops: no refund in the ledger); undo the step by hand, then resolve it with --succeeded")
	assert.Contains(t, stdout, "step charge: its compensation cannot be proven (intent failed)")
}
