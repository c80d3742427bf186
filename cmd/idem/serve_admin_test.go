package main

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listeningAdmin matches the admin address in the "listening" line.
var listeningAdmin = regexp.MustCompile(`msg=listening .*admin=(\S+)`)

// adminURL returns the admin API's base URL from the "listening" line.
func adminURL(t *testing.T, logs *logTail) string {
	t.Helper()
	m := listeningAdmin.FindStringSubmatch(logs.text())
	require.NotNil(t, m, "no admin address in the log:\n%s", logs.text())
	require.NotEqual(t, `""`, m[1], "the admin API is off:\n%s", logs.text())
	return "http://" + m[1]
}

// With --admin the admin API listens apart: the public listener has no
// /admin/faults, the admin listener no payments.
func TestServe_AdminListensApart(t *testing.T) {
	t.Parallel()
	url, logs, _ := startServe(t, map[string]string{adminTokenEnv: "env-token"}, "--admin", "--admin-addr", "127.0.0.1:0")
	admin := adminURL(t, logs)
	require.NotEqual(t, url, admin)
	client := noKeepAlive()
	auth := http.Header{"Authorization": {"Bearer env-token"}}

	public, err := send(t, client, http.MethodGet, url+"/admin/faults", "", auth)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, public.status, "no admin API on the public listener")

	got, err := send(t, client, http.MethodGet, admin+"/admin/faults", "", auth)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, got.status, "with --admin the token may come from "+adminTokenEnv)

	pay, err := send(t, client, http.MethodPost, admin+"/v1/payments", "k", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, pay.status, "no payments on the admin listener")
}

// Wrong tokens are limited per address: past a few, even the right token
// is answered 429 problem+json with Retry-After.
func TestServe_AdminLimitsTokenGuesses(t *testing.T) {
	t.Parallel()
	_, logs, _ := startServe(t, nil, "--admin-addr", "127.0.0.1:0", "--admin-token", "right")
	admin := adminURL(t, logs) + "/admin/faults"
	client := noKeepAlive()
	var statuses []int
	for range 20 {
		r, err := send(t, client, http.MethodGet, admin, "", http.Header{"Authorization": {"Bearer wrong"}})
		require.NoError(t, err)
		statuses = append(statuses, r.status)
	}
	assert.Equal(t, http.StatusUnauthorized, statuses[0])
	assert.Contains(t, statuses, http.StatusTooManyRequests, "20 guesses in a row are limited: %v", statuses)

	r, err := send(t, client, http.MethodGet, admin, "", http.Header{"Authorization": {"Bearer right"}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, r.status, "a right guess during the lockout is not confirmed")
	assert.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, secs, 1)
	assert.Contains(t, r.body, "too-many-requests")
}
