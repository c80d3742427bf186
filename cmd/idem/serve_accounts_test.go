package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// --account models accounts with several tokens: a retry under the
// account's renewed token is replayed, another token is refused, and no
// token reaches the log.
func TestServe_AccountsReplayARotatedToken(t *testing.T) {
	t.Parallel()
	for name, start := range map[string]func(t *testing.T) (string, *logTail){
		"flags": func(t *testing.T) (string, *logTail) {
			url, logs, _ := startServe(t, nil, "--account", "acct_1=tok_old,tok_new", "--account", "acct_2=tok_b")
			return url, logs
		},
		"environment": func(t *testing.T) (string, *logTail) {
			url, logs, _ := startServe(t, map[string]string{accountsEnv: "acct_1=tok_old,tok_new; acct_2=tok_b"})
			return url, logs
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, logs := start(t)
			client := noKeepAlive()
			bearer := func(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }
			first, err := send(t, client, http.MethodPost, url+"/v1/payments", "order-42", bearer("tok_old"))
			require.NoError(t, err)
			require.Equal(t, http.StatusCreated, first.status, first.body)
			retry, err := send(t, client, http.MethodPost, url+"/v1/payments", "order-42", bearer("tok_new"))
			require.NoError(t, err)
			assert.Equal(t, "true", retry.header.Get("Idempotent-Replayed"), "the renewed token names the same account")
			assert.Equal(t, first.body, retry.body)
			other, err := send(t, client, http.MethodPost, url+"/v1/payments", "order-42", bearer("tok_b"))
			require.NoError(t, err)
			assert.Empty(t, other.header.Get("Idempotent-Replayed"), "another account")
			unknown, err := send(t, client, http.MethodPost, url+"/v1/payments", "order-42", bearer("tok_z"))
			require.NoError(t, err)
			assert.Equal(t, http.StatusUnauthorized, unknown.status)
			assert.Contains(t, logs.text(), `principal="account (2 accounts)"`)
			for _, token := range []string{"tok_old", "tok_new", "tok_b"} {
				assert.NotContains(t, logs.text(), token, "tokens are never logged")
			}
		})
	}
}

func TestServe_AccountsRefuseMalformedBooks(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"no account":       {"--account", "=s3cr3t"},
		"no equals":        {"--account", "acct_1"},
		"empty token":      {"--account", "acct_1=s3cr3t,"},
		"token twice":      {"--account", "a=s3cr3t", "--account", "b=s3cr3t"},
		"token with space": {"--account", "a=s3 cr3t"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			root := newRootCommand(serveTestEnv(nil))
			root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
			root.SetOut(io.Discard)
			root.SetErr(&stderr)
			err := root.ExecuteContext(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "account")
			assert.NotContains(t, err.Error(), "cr3t", "no token in the error")
		})
	}
}

// Accounts need no principal key for a shared store: nothing is hashed,
// so replicas and restarts agree.
func TestServe_AccountsNeedNoPrincipalKeyForASharedStore(t *testing.T) {
	t.Parallel()
	root := newRootCommand(func(string) string { return "" })
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--store", "postgres://app@" + testenv.ClosedAddr(t) + "/db", "--account", "acct_1=s3cr3t"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(t.Context())
	require.Error(t, err, "nothing listens on the store's port")
	assert.NotContains(t, err.Error(), "principal-key")
}
