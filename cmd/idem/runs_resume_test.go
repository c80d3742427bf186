package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// A run's charge whose answer was lost is pending; runs resume sends it
// again with its key, so the server replays the payment it made: one
// payment, and the program then goes on from the settled step without a
// send.
func TestRunsResume_SettlesTheLostStepWithOnePayment(t *testing.T) {
	t.Parallel()
	path, srv := sagaKeystore(t)
	require.Equal(t, 1, paymentsOf(srv, "charge-order-2"), "the lost answer's payment was made")
	key := saga.DeriveStepKey(nil, "", "order-2", "charge", false)

	// The provider loses the answer again: the outcome stays unknown.
	srv.LoseNextResponses(1)
	stdout, stderr, code := runRunsCLI(t, nil, "resume", "order-2", "--keystore", path, "--token", testToken, "--max-attempts", "1", "--json")
	assert.Equal(t, exitFailed, code, stderr)
	var rep runsResumeReport
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	require.Len(t, rep.Intents, 1)
	assert.Equal(t, key, rep.Intents[0].Key)
	assert.Equal(t, keystore.Pending, rep.Intents[0].State)
	assert.Equal(t, saga.Running, rep.Run.State)
	assert.Equal(t, 1, rep.Run.Unsettled)
	assert.Contains(t, rep.Error, "run order-2: 1 of 1 resent intent left with its outcome unknown")
	assert.Contains(t, stderr, "left with its outcome unknown")

	stdout, stderr, code = runRunsCLI(t, nil, "resume", "order-2", "--keystore", path, "--token", testToken, "--no-progress")
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `(?m)^succeeded  `+key+`  saga/order-2/charge  201 Created$`, stdout)
	assert.Contains(t, stdout, "run order-2 is running\n  - the program goes on with the run")
	assert.Equal(t, 1, paymentsOf(srv, "charge-order-2"), "the resend was a replay, not a second payment")
	assert.NotContains(t, stdout+stderr, testToken, "credentials are never printed")

	stdout, _, code = runRunsCLI(t, nil, "resume", "order-2", "--keystore", path, "--token", testToken)
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "nothing to resend: run order-2 has no pending or accepted intent")

	// The program takes the run up: the charge replays from the keystore.
	c := sagaClient(t, idem.WithBoltStore(path, nil))
	defer c.Close()
	s, err := saga.New(c)
	require.NoError(t, err)
	r, err := s.Run(t.Context(), "order-2")
	require.NoError(t, err)
	sent := srv.Requests()
	req, err := sagaPayment(srv.URL, 2000, "charge-order-2")
	require.NoError(t, err)
	resp, err := r.Step(t.Context(), "charge", req, sagaRefund(srv.URL))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	resp.Body.Close()
	assert.Equal(t, sent, srv.Requests(), "a settled step is not sent again")
	require.NoError(t, r.Complete(t.Context()))
	assert.Equal(t, 1, paymentsOf(srv, "charge-order-2"))
}

// Resume resends nothing of a run that needs an operator, and says so
// with exit status 1: a refused compensation is never resent.
func TestRunsResume_NeedsOperatorIsAFinding(t *testing.T) {
	t.Parallel()
	path, srv := sagaKeystore(t)
	sent := srv.Requests()
	stdout, stderr, code := runRunsCLI(t, nil, "resume", "tenant-a@order-3", "--keystore", path, "--token", testToken)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stdout, "nothing to resend: run tenant-a@order-3 has no pending or accepted intent")
	assert.Contains(t, stdout, "run tenant-a@order-3 is needs_operator")
	assert.Contains(t, stdout, "undo the step by hand at the provider")
	assert.Equal(t, "Error: run tenant-a@order-3 needs an operator (see the lines above)\n", stderr)
	assert.Equal(t, sent, srv.Requests())
	assert.Zero(t, paymentsOf(srv, "refund-charge-order-3"))
}
