package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// idem serve --dialect checkout speaks Checkout.com's vocabulary: the key
// travels in Cko-Idempotency-Key, a replay is unmarked, every answer has
// its own Cko-Request-Id, a validation error is 422 request_invalid and
// is not kept.
func TestServe_CheckoutDialect(t *testing.T) {
	t.Parallel()
	url, logs, _ := startServe(t, nil, "--dialect", "checkout")
	client := noKeepAlive()
	key := http.Header{"Cko-Idempotency-Key": {"74f18c1e-e797-4794-9cc5-f0bd4d771e93"}}

	bad, err := sendBody(t, client, http.MethodPost, url+"/v1/payments", `{"amount":1000,"currency":"euro"}`, key)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, bad.status)
	assert.JSONEq(t, `{"request_id":"`+bad.header.Get("Cko-Request-Id")+`","error_type":"request_invalid","error_codes":["currency_invalid"]}`, bad.body)

	first, err := send(t, client, http.MethodPost, url+"/v1/payments", "", key)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.status, "the 422 was not kept: %s", first.body)
	replay, err := send(t, client, http.MethodPost, url+"/v1/payments", "", key)
	require.NoError(t, err)
	assert.Equal(t, first.body, replay.body)
	assert.Empty(t, replay.header.Get("Idempotent-Replayed"), "Checkout.com documents no replay marker")
	assert.NotEqual(t, first.header.Get("Cko-Request-Id"), replay.header.Get("Cko-Request-Id"))

	assert.Contains(t, logs.text(), "dialect=checkout")
	assert.Contains(t, logs.text(), "retention=24h0m0s")
}

// idem check --dialect checkout passes against idem serve --dialect
// checkout, every check run (the admin API slows the handler for the
// in-progress check), and gives the same verdicts when run twice.
func TestCheck_CheckoutAgainstServe(t *testing.T) {
	t.Parallel()
	url, _, _ := startServe(t, nil, "--dialect", "checkout", "--admin-addr", "public", "--admin-token", "admin-secret")
	var runs [2]map[string]bool
	for i := range runs {
		stdout, stderr, err := runCheckCLI(t, url, "--dialect", "checkout", "--admin-token", "admin-secret",
			"--bursts", "3", "--burst-width", "8", "--json")
		require.NoError(t, err, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		var report checkReport
		require.NoError(t, json.Unmarshal([]byte(stdout), &report))
		assert.Equal(t, "checkout", report.Dialect)
		assert.Zero(t, report.Failed)
		assert.Zero(t, report.Skipped, stdout)
		runs[i] = map[string]bool{}
		for _, c := range report.Checks {
			runs[i][c.ID] = c.Passed
		}
		assert.Contains(t, runs[i], idemtest.CheckInProgress)
		assert.Contains(t, runs[i], idemtest.CheckErrorNotStored)
	}
	assert.Equal(t, runs[0], runs[1], "two runs, the same verdicts")
}
