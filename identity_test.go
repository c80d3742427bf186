package idem

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// withToken is req with its bearer token replaced.
func withToken(req *http.Request, token string) *http.Request {
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// accountOfToken names the account of a token "acct.version", so a
// refreshed token names the same account.
func accountOfToken(r *http.Request) (string, error) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		return "", nil
	}
	acct, _, ok := strings.Cut(tok, ".")
	if !ok {
		return "", errors.New("token names no account")
	}
	return acct, nil
}

// A refreshed token under the default principal (a fingerprint of the
// credentials) is another principal: Begin of the same name neither
// guesses it is the same account nor mints a second key; it says so with
// the existing key.
func TestRefreshedCredentialsAreAmbiguous(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	first := begin(t, c, "order-7/payment", withToken(paymentRequest(t, srv.URL, 700, "order-7"), "acct_1.v1"))
	_, err := c.Do(ctx, first)
	require.NoError(t, err)

	_, err = c.Begin(ctx, "order-7/payment", withToken(paymentRequest(t, srv.URL, 700, "order-7"), "acct_1.v2"))
	require.ErrorIs(t, err, ErrIdentityAmbiguous)
	var ie *IdentityError
	require.ErrorAs(t, err, &ie)
	require.Len(t, ie.Existing, 1)
	assert.Equal(t, first.Key, ie.Existing[0].Key, "the error carries the existing key")
	assert.Equal(t, first.Principal, ie.Existing[0].Principal)
	assert.Equal(t, Succeeded, ie.Existing[0].State)
	assert.Equal(t, "order-7/payment", ie.Name)
	assert.NotEqual(t, first.Principal, ie.Principal)
	for _, want := range []string{"WithPrincipal", "WithAdopt", "idem intents adopt", "key#" + keyHash(first.Key)} {
		assert.Contains(t, err.Error(), want)
	}
	for _, secret := range []string{first.Key, "acct_1.v1", "acct_1.v2"} {
		assert.NotContains(t, err.Error(), secret, "an error never holds a key or a credential")
	}

	recs, err := c.store.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, 1, "no second intent")
	assert.Equal(t, 1, srv.PaymentCount())
	assert.Empty(t, srv.Payments("acct_1.v2"))
}

// Anonymous and credentialed Begins of one name are ambiguous both ways.
func TestAnonymousAndCredentialedNamesakesAreAmbiguous(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	begin(t, c, "with-token", paymentRequest(t, srv.URL, 100, "a"))
	anon := paymentRequest(t, srv.URL, 100, "a")
	anon.Header.Del("Authorization")
	_, err := c.Begin(ctx, "with-token", anon)
	require.ErrorIs(t, err, ErrIdentityAmbiguous)

	anon = paymentRequest(t, srv.URL, 100, "b")
	anon.Header.Del("Authorization")
	begin(t, c, "anonymous", anon)
	_, err = c.Begin(ctx, "anonymous", paymentRequest(t, srv.URL, 100, "b"))
	require.ErrorIs(t, err, ErrIdentityAmbiguous)
	var ie *IdentityError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "under no principal")
}

// WithAdopt takes the intent over for the new credentials: the same key,
// bound to the new principal, which a Begin of the name then finds; the
// old credentials are now the other principal.
func TestWithAdoptTakesTheIntentOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	first := begin(t, c, "order-8/payment", withToken(paymentRequest(t, srv.URL, 800, "order-8"), "acct_1.v1"))
	_, err := c.Do(ctx, first)
	require.NoError(t, err)

	adopted, err := c.Begin(ctx, "order-8/payment", withToken(paymentRequest(t, srv.URL, 800, "order-8"), "acct_1.v2"), WithAdopt(first.Key))
	require.NoError(t, err)
	assert.Equal(t, first.Key, adopted.Key)
	assert.Equal(t, "order-8/payment", adopted.Name)
	assert.NotEqual(t, first.Principal, adopted.Principal)
	assert.Equal(t, Succeeded, adopted.State)

	again := begin(t, c, "order-8/payment", withToken(paymentRequest(t, srv.URL, 800, "order-8"), "acct_1.v2"))
	assert.Equal(t, first.Key, again.Key, "the name is the new principal's now")
	resp, err := c.Do(ctx, again)
	require.NoError(t, err)
	assert.True(t, IsReplay(resp), "settled: replayed locally")
	assert.Equal(t, 1, srv.PaymentCount())

	_, err = c.Begin(ctx, "order-8/payment", withToken(paymentRequest(t, srv.URL, 800, "order-8"), "acct_1.v1"))
	require.ErrorIs(t, err, ErrIdentityAmbiguous, "the old token is the other principal now")
}

// WithAdopt refuses what it cannot adopt, and begins nothing.
func TestWithAdoptRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	first := begin(t, c, "order-9/payment", withToken(paymentRequest(t, srv.URL, 900, "order-9"), "acct_1.v1"))

	_, err := c.Begin(ctx, "order-9/payment", withToken(paymentRequest(t, srv.URL, 900, "order-9"), "acct_1.v2"), WithAdopt("no-such-key"))
	require.ErrorIs(t, err, keystore.ErrNotFound)
	_, err = c.Begin(ctx, "order-9/payment", withToken(paymentRequest(t, srv.URL, 901, "order-9"), "acct_1.v2"), WithAdopt(first.Key))
	require.ErrorIs(t, err, ErrIntentConflict, "another payload")
	_, err = c.Begin(ctx, "", withToken(paymentRequest(t, srv.URL, 900, "order-9"), "acct_1.v2"), WithAdopt(first.Key))
	require.ErrorIs(t, err, ErrInvalidRequest, "no name")
	_, err = c.Begin(ctx, "order-9/payment", withToken(paymentRequest(t, srv.URL, 900, "order-9"), "acct_1.v1"), WithAdopt("another-key"))
	require.ErrorIs(t, err, ErrIntentConflict, "the name is this principal's under another key")

	recs, err := c.store.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, first.Principal, recs[0].Principal, "nothing was rebound")
}

// WithPrincipal names accounts: another account's intent of the same
// name is another payment, not an ambiguity. An intent begun under the
// default principal of these very credentials (before WithPrincipal was
// set) is: the same caller, named two ways.
func TestWithPrincipalSeparatesAccountsButNotOldDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	store := keystore.NewMemory()
	before, err := New(append(fastOptions(), WithStore(store))...)
	require.NoError(t, err)
	old := begin(t, before, "upgrade/payment", withToken(paymentRequest(t, srv.URL, 100, "u"), "acct_9.v1"))

	c := newTestClient(t, WithStore(store), WithPrincipal(accountOfToken))
	a := begin(t, c, "shared/payment", withToken(paymentRequest(t, srv.URL, 100, "s"), "acct_1.v1"))
	b := begin(t, c, "shared/payment", withToken(paymentRequest(t, srv.URL, 100, "s"), "acct_2.v1"))
	assert.NotEqual(t, a.Key, b.Key, "two accounts, two intents")
	refreshed := begin(t, c, "shared/payment", withToken(paymentRequest(t, srv.URL, 100, "s"), "acct_1.v2"))
	assert.Equal(t, a.Key, refreshed.Key, "a refreshed token of one account is that account's intent")

	_, err = c.Begin(ctx, "upgrade/payment", withToken(paymentRequest(t, srv.URL, 100, "u"), "acct_9.v1"))
	require.ErrorIs(t, err, ErrIdentityAmbiguous, "begun under the default principal of the same credentials")
	var ie *IdentityError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, old.Key, ie.Existing[0].Key)
}

// Client.Adopt binds an intent to the credentials of a request (no body
// needed); a Begin with them then finds it.
func TestClientAdopt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	first := begin(t, c, "order-10/payment", withToken(paymentRequest(t, srv.URL, 1000, "order-10"), "acct_1.v1"))

	creds, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	creds.Header.Set("Authorization", "Bearer acct_1.v2")
	adopted, err := c.Adopt(ctx, first.Key, creds)
	require.NoError(t, err)
	assert.Equal(t, first.Key, adopted.Key)
	assert.Equal(t, "order-10/payment", adopted.Name)
	assert.NotEqual(t, first.Principal, adopted.Principal)

	again := begin(t, c, "order-10/payment", withToken(paymentRequest(t, srv.URL, 1000, "order-10"), "acct_1.v2"))
	assert.Equal(t, first.Key, again.Key)

	_, err = c.Adopt(ctx, "missing", creds)
	require.ErrorIs(t, err, keystore.ErrNotFound)
	_, err = c.Adopt(ctx, first.Key, nil)
	require.ErrorIs(t, err, ErrInvalidRequest)
}
