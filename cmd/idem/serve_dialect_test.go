package main

import (
	"bytes"
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
	assert.Equal(t, `invalid --dialect "braintree": want one of adyen, idem, paypal, shopify, square, stripe`, err.Error())
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
	assert.Contains(t, stdout.String(), "adyen, idem, paypal, shopify, square, stripe")
	assert.Contains(t, stdout.String(), `(default "idem")`)
}
