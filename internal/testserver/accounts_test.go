package testserver

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testAccounts has one account with two tokens (one renewed) and another
// with one.
var testAccounts = map[string][]string{"acct_1": {"tokA", "tokB"}, "acct_2": {"tokC"}}

// A retry under another token of the same account is replayed: one
// payment, listed and read under either token, never under another
// account's.
func TestAccountsRotatedTokenReplays(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, WithAccounts(testAccounts))
	client := ts.Client()
	first := decodePayment(t, do(t, client, ts.URL, pay("tokA", "order-42")))
	retry := do(t, client, ts.URL, pay("tokB", "order-42"))
	require.Equal(t, http.StatusCreated, retry.status, "body: %s", retry.body)
	assert.Equal(t, "true", retry.header.Get(ReplayedHeader), "the rotated token names the same account")
	assert.Equal(t, first.ID, decodePayment(t, retry).ID)
	other := decodePayment(t, do(t, client, ts.URL, pay("tokC", "order-42")))
	assert.NotEqual(t, first.ID, other.ID, "another account's key is its own")
	assert.Equal(t, 2, paymentCount(t, s))

	list := do(t, client, ts.URL, call{method: http.MethodGet, path: "/v1/payments", token: "tokB"})
	require.Equal(t, http.StatusOK, list.status)
	var payments paymentList
	require.NoError(t, json.Unmarshal(list.body, &payments))
	require.Len(t, payments.Data, 1)
	assert.Equal(t, first.ID, payments.Data[0].ID)
	got := do(t, client, ts.URL, call{method: http.MethodGet, path: "/v1/payments/" + first.ID, token: "tokB"})
	assert.Equal(t, http.StatusOK, got.status)
	hidden := do(t, client, ts.URL, call{method: http.MethodGet, path: "/v1/payments/" + first.ID, token: "tokC"})
	assert.Equal(t, http.StatusNotFound, hidden.status)
	assert.Equal(t, "account:acct_1", s.PrincipalOf("tokA"))
	assert.Equal(t, s.PrincipalOf("tokA"), s.PrincipalOf("tokB"))
}

// An unlisted token is refused before anything runs; no Authorization is
// still the anonymous caller, chosen explicitly.
func TestAccountsRefuseUnknownTokens(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, WithAccounts(testAccounts))
	client := ts.Client()
	for _, c := range []call{
		pay("tokZ", "k1"),
		{method: http.MethodGet, path: "/v1/payments", token: "tokZ"},
	} {
		r := do(t, client, ts.URL, c)
		assert.Equal(t, http.StatusUnauthorized, r.status, "%s %s", c.method, c.path)
		assert.Equal(t, ProblemUnauthorized, r.problemType())
		assert.Equal(t, "Bearer", r.header.Get("WWW-Authenticate"))
	}
	assert.Zero(t, paymentCount(t, s), "nothing ran")
	anon := decodePayment(t, do(t, client, ts.URL, pay("", "k1")))
	assert.NotEmpty(t, anon.ID)
	assert.Equal(t, AnonymousPrincipal, s.PrincipalOf(""))
	assert.Equal(t, "invalid token", s.PrincipalOf("tokZ"))
}

func TestAccountsRejectsAmbiguousBooks(t *testing.T) {
	t.Parallel()
	for name, accounts := range map[string]map[string][]string{
		"token in two accounts": {"a": {"t1"}, "b": {"t1"}},
		"account without token": {"a": nil},
		"empty account id":      {"": {"t1"}},
		"token with a space":    {"a": {"t 1"}},
		"empty token":           {"a": {""}},
	} {
		_, err := New(WithAccounts(accounts))
		assert.Error(t, err, name)
	}
}
