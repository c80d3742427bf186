package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPrincipalKey is the principal key of the serve tests' servers, so
// that two of them on one store agree, as replicas must.
const testPrincipalKey = "serve tests principal key"

// serveTestEnv is the environment of a serve test: env, with the test
// principal key unless env names one.
func serveTestEnv(env map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == principalKeyEnv {
			return testPrincipalKey
		}
		return ""
	}
}

// A shared store without a principal key would put every caller in a new
// scope on each restart and each replica: idem serve refuses to start.
func TestServe_SharedStoreNeedsAPrincipalKey(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"postgres":  {"--store", "postgres://app@127.0.0.1:1/db"},
		"redis":     {"--store", "redis://127.0.0.1:1/0"},
		"short key": {"--principal-key", "short"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			root := newRootCommand(func(string) string { return "" })
			root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
			root.SetOut(io.Discard)
			root.SetErr(&stderr)
			err := root.ExecuteContext(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "principal-key")
		})
	}
}

// A literal "Bearer anonymous" is not the anonymous caller. (Two
// processes with one key replaying each other's payments:
// assertStoreOutlivesServer.)
func TestServe_AnonymousTokenIsNotTheAnonymousCaller(t *testing.T) {
	t.Parallel()
	first, logs, _ := startServe(t, nil)
	assert.Contains(t, logs.text(), `principal="bearer token, principal key given"`)
	assert.NotContains(t, logs.text(), testPrincipalKey, "the key is never logged")
	client := noKeepAlive()
	anon, err := send(t, client, http.MethodPost, first+"/v1/payments", "k2", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, anon.status, anon.body)
	named, err := send(t, client, http.MethodPost, first+"/v1/payments", "k2", http.Header{"Authorization": {"Bearer anonymous"}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, named.status, named.body)
	assert.Empty(t, named.header.Get("Idempotent-Replayed"), "a token called anonymous never gets the anonymous caller's answer")
	assert.NotEqual(t, anon.body, named.body)
}
