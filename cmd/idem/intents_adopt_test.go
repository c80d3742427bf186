package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// The keystore an earlier build (before names were scoped by principal)
// wrote, in testdata/legacy: its intents were begun with legacyToken.
const (
	legacyToken  = "tok_legacy_build"
	legacyTarget = "http://payments.legacy.test/v1/payments"
)

// legacyCopy copies testdata/legacy/9fb8ecb.db (opening migrates a file in
// place) and returns its path and the key of legacy/pending-1.
func legacyCopy(t *testing.T) (string, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "legacy", "9fb8ecb.db"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "legacy.db")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	st, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	defer st.Close()
	rec, err := st.GetByName(t.Context(), "legacy/pending-1")
	require.NoError(t, err)
	return path, rec.Key
}

// legacyPaymentRequest is the request legacy/pending-1 was begun with.
func legacyPaymentRequest(t *testing.T, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, legacyTarget, strings.NewReader(`{"amount": 1001, "currency": "EUR", "reference": "legacy/pending-1"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// list shows which intents have no principal: those a Begin with
// credentials refuses until they are adopted.
func TestList_ShowsPrincipals(t *testing.T) {
	t.Parallel()
	path, _ := legacyCopy(t)
	stdout, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", path)
	require.NoError(t, err, stderr)
	assert.Regexp(t, `(?m)^KEY\s+NAME\s+PRINCIPAL\s+STATE`, stdout)
	assert.Regexp(t, `(?m)\slegacy/pending-1\s+none\s+pending\s`, stdout)

	p := populateKeystore(t)
	stdout, _, err = runIntentsCLI(t, nil, "list", "--keystore", p.path)
	require.NoError(t, err)
	in := p.succeeded[0]
	assert.Regexp(t, `(?m)^`+in.Key+`\s+`+in.Name+`\s+`+in.Principal[:8]+`\s+succeeded\s`, stdout)
	js, _, err := runIntentsCLI(t, nil, "list", "--keystore", p.path, "--json")
	require.NoError(t, err)
	assert.Contains(t, js, `"principal": "`+in.Principal+`"`)
}

// adopt binds an earlier build's intent to the token that resumes it: the
// program's Begin of the name then finds it, with its key.
func TestAdopt_BindsAnEarlierBuildsIntent(t *testing.T) {
	t.Parallel()
	path, key := legacyCopy(t)

	stdout, stderr, err := runIntentsCLI(t, map[string]string{tokenEnv: legacyToken}, "adopt", "--keystore", path, key)
	require.NoError(t, err, stderr)
	assert.Regexp(t, `^adopted  `+key+`  legacy/pending-1  principal [0-9a-f]{8} \(was no principal`, stdout)
	assert.NotContains(t, stdout, legacyToken)

	c, err := idem.New(idem.WithBoltStore(path, nil))
	require.NoError(t, err)
	defer c.Close()
	in, err := c.Begin(context.Background(), "legacy/pending-1", legacyPaymentRequest(t, legacyToken))
	require.NoError(t, err)
	assert.Equal(t, key, in.Key)
	_, err = c.Begin(context.Background(), "legacy/pending-1", legacyPaymentRequest(t, "tok_someone_else"))
	require.ErrorIs(t, err, idem.ErrIdentityAmbiguous)
}

// adopt --principal binds the intent to the account a program's
// WithPrincipal names.
func TestAdopt_ToAnAccount(t *testing.T) {
	t.Parallel()
	path, key := legacyCopy(t)
	_, stderr, err := runIntentsCLI(t, nil, "adopt", "--keystore", path, key, "--principal", "acct_1")
	require.NoError(t, err, stderr)

	account := func(*http.Request) (string, error) { return "acct_1", nil }
	c, err := idem.New(idem.WithBoltStore(path, nil), idem.WithPrincipal(account))
	require.NoError(t, err)
	defer c.Close()
	in, err := c.Begin(context.Background(), "legacy/pending-1", legacyPaymentRequest(t, "acct_1.any_token"))
	require.NoError(t, err)
	assert.Equal(t, key, in.Key)
}

// adopt refuses what it cannot do, changing nothing.
func TestAdopt_Refusals(t *testing.T) {
	t.Parallel()
	path, key := legacyCopy(t)
	_, stderr, err := runIntentsCLI(t, nil, "adopt", "--keystore", path, key)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "--token")
	_, stderr, err = runIntentsCLI(t, nil, "adopt", "--keystore", path, "legacy/pending-1", "--token", "t")
	require.Error(t, err)
	assert.Contains(t, stderr, "adopt takes a key")
}

// Two intents of one name (an earlier build's, unscoped, and one under a
// principal): show and settle by the name refuse, listing both keys,
// instead of picking one.
func TestShowAndSettle_RefuseANameOfTwoIntents(t *testing.T) {
	t.Parallel()
	path, key := legacyCopy(t)
	c, err := idem.New(idem.WithBoltStore(path, nil))
	require.NoError(t, err)
	other, err := c.Begin(context.Background(), "legacy/pending-1", legacyPaymentRequest(t, legacyToken), idem.WithAdopt(key))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	// An unscoped intent of the same name again, as an earlier build would
	// write it beside the adopted one.
	st, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	rec, err := st.Get(context.Background(), key)
	require.NoError(t, err)
	rec.Key, rec.Name, rec.Principal, rec.SecretHeaders = "legacy-twin-key", "legacy/pending-1", "", nil
	_, created, err := st.Create(context.Background(), rec)
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, st.Close())

	for _, args := range [][]string{
		{"show", "--keystore", path, "legacy/pending-1"},
		{"settle", "--keystore", path, "legacy/pending-1", "--failed", "--note", "n"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, args...)
		require.Error(t, err, args[0])
		assert.Contains(t, stderr, `2 intents are named "legacy/pending-1"`, args[0])
		assert.Contains(t, stderr, other.Key, args[0])
		assert.Contains(t, stderr, "legacy-twin-key", args[0])
		assert.Equal(t, exitFailed, exitCodeOf(err), args[0])
	}
	st, err = keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	defer st.Close()
	for _, k := range []string{key, "legacy-twin-key"} {
		rec, err := st.Get(context.Background(), k)
		require.NoError(t, err)
		assert.Equal(t, keystore.Pending, rec.State, "nothing settled")
	}
}
