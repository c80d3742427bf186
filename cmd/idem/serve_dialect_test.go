package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idem serve --dialect stripe speaks Stripe's vocabulary: keys are
// optional, replays carry Idempotent-Replayed: true
// (https://docs.stripe.com/error-low-level), the key comes back in
// Idempotency-Key, a reused key is a JSON idempotency_error; the log names
// the dialect.
func TestServe_DialectFlag(t *testing.T) {
	t.Parallel()
	url, logs, _ := startServe(t, nil, "--dialect", "stripe")
	client := noKeepAlive()

	first, err := send(t, client, http.MethodPost, url+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	replay, err := send(t, client, http.MethodPost, url+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	assert.Equal(t, first.body, replay.body)
	assert.Empty(t, first.header.Get("Idempotent-Replayed"))
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	assert.Equal(t, "k1", replay.header.Get("Idempotency-Key"))

	reused, err := sendBody(t, client, http.MethodPost, url+"/v1/payments", `{"amount":1001,"currency":"EUR"}`,
		http.Header{"Idempotency-Key": {"k1"}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, reused.status)
	assert.Contains(t, reused.body, `"type":"idempotency_error"`)

	keyless, err := send(t, client, http.MethodPost, url+"/v1/payments", "", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, keyless.status, "Stripe does not require a key")

	assert.Contains(t, logs.text(), "dialect=stripe")
	assert.Contains(t, logs.text(), "retention=24h0m0s")
}

// The dialect's retention applies unless --retention is given.
func TestServe_DialectRetention(t *testing.T) {
	t.Parallel()
	_, logs, _ := startServe(t, nil, "--dialect", "adyen")
	assert.Contains(t, logs.text(), "retention=168h0m0s")
	_, logs, _ = startServe(t, nil, "--dialect", "adyen", "--retention", "1h")
	assert.Contains(t, logs.text(), "retention=1h0m0s")
}

func TestServe_UnknownDialectIsOneLine(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	root := newRootCommand(func(string) string { return "" })
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--dialect", "braintree"})
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	err := root.ExecuteContext(t.Context())
	require.Error(t, err)
	assert.Equal(t, `invalid --dialect "braintree": want one of adyen, checkout, idem, paypal, square, stripe, stripe-v2`, err.Error())
	assert.NotContains(t, err.Error(), "\n")
}

func TestServe_HelpListsDialects(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	root := newRootCommand(func(string) string { return "" })
	root.SetArgs([]string{"serve", "--help"})
	root.SetOut(&stdout)
	require.NoError(t, root.Execute())
	assert.Contains(t, stdout.String(), "--dialect")
	assert.Contains(t, stdout.String(), "adyen, checkout, idem, paypal, square, stripe")
	assert.Contains(t, stdout.String(), `(default "idem")`)
}

// idem serve --dialect stripe-v2 speaks Stripe's API v2
// (https://docs.stripe.com/api-v2-overview#idempotency): keys are
// optional, kept 30 days, a retry of a finished request gets its answer
// with no replay marker and no echoed key (both documented for v1 only),
// a reused key is a JSON idempotency_error.
func TestServe_DialectStripeV2(t *testing.T) {
	t.Parallel()
	url, logs, _ := startServe(t, nil, "--dialect", "stripe-v2")
	client := noKeepAlive()

	first, err := send(t, client, http.MethodPost, url+"/v1/payments", "v2-k1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	again, err := send(t, client, http.MethodPost, url+"/v1/payments", "v2-k1", nil)
	require.NoError(t, err)
	assert.Equal(t, first.body, again.body)
	assert.Empty(t, again.header.Get("Idempotent-Replayed"))
	assert.Empty(t, again.header.Get("Idempotency-Key"))

	reused, err := sendBody(t, client, http.MethodPost, url+"/v1/payments", `{"amount":1001,"currency":"EUR"}`,
		http.Header{"Idempotency-Key": {"v2-k1"}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, reused.status)
	assert.Contains(t, reused.body, `"type":"idempotency_error"`)

	keyless, err := send(t, client, http.MethodPost, url+"/v1/payments", "", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, keyless.status, "Stripe generates a key when none is sent")

	assert.Contains(t, logs.text(), "dialect=stripe-v2")
	assert.Contains(t, logs.text(), "retention=720h0m0s")
}

// idem check --dialect stripe-v2 passes against idem serve --dialect
// stripe-v2, twice in a row against the same server, with the same
// verdicts; the admin token lets the in-progress check slow the server so
// that it is judged, not skipped.
func TestCheck_StripeV2AgainstServe(t *testing.T) {
	t.Parallel()
	url, _, _ := startServe(t, nil, "--dialect", "stripe-v2", "--admin", "--admin-addr", "public", "--admin-token", "v2-admin")
	var verdicts [2]map[string]string
	for i := range verdicts {
		stdout, stderr, err := runCheckCLI(t, url, "--dialect", "stripe-v2", "--bursts", "3", "--burst-width", "8",
			"--admin-token", "v2-admin", "--json")
		require.NoError(t, err, "run %d\nstdout:\n%s\nstderr:\n%s", i, stdout, stderr)
		var report checkReport
		require.NoError(t, json.Unmarshal([]byte(stdout), &report))
		assert.Equal(t, "stripe-v2", report.Dialect)
		assert.Zero(t, report.Failed, stdout)
		verdicts[i] = map[string]string{}
		for _, c := range report.Checks {
			verdicts[i][c.ID] = fmt.Sprintf("passed=%v skipped=%v", c.Passed, c.Skipped)
		}
	}
	assert.Equal(t, "passed=true skipped=false", verdicts[0]["in-progress"])
	assert.Equal(t, verdicts[0], verdicts[1])
}
