package idem

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// lostAnswerIntent begins a payment with testToken in a bbolt keystore,
// loses its answer (the server charged) and closes the process: what a
// crash after the charge leaves behind.
func lostAnswerIntent(t *testing.T) (*idemtest.Server, string, *Intent) {
	t.Helper()
	srv := idemtest.NewServer(t)
	path := filepath.Join(t.TempDir(), "intents.db")
	c, err := New(append(fastOptions(), WithBoltStore(path, nil), WithMaxAttempts(1))...)
	require.NoError(t, err)
	srv.LoseNextResponses(1)
	in := begin(t, c, "order-42/payment", paymentRequest(t, srv.URL, 4200, "order-42"))
	_, err = c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	require.NoError(t, c.Close())
	require.Equal(t, 1, srv.PaymentCount())
	return srv, path, in
}

// A resume without the credentials the intent was begun with is refused
// before any byte leaves: the server scopes keys by principal, so the
// same key sent anonymously would be a second payment.
func TestResumeWithoutCredentialsIsRefused(t *testing.T) {
	t.Parallel()
	srv, path, in := lostAnswerIntent(t)
	c := newTestClient(t, WithBoltStore(path, nil))
	resumed, err := c.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	before := srv.Requests()
	_, err = c.Do(context.Background(), resumed)
	require.ErrorIs(t, err, ErrCredentialsMissing)
	assert.ErrorContains(t, err, "Authorization")
	assert.Equal(t, before, srv.Requests(), "nothing was sent")
	assert.Equal(t, Pending, resumed.State)
	assert.Equal(t, 1, srv.PaymentCount())
}

// Another principal's credentials (another tenant's token, one --token for
// a keystore of several tenants) are refused the same way.
func TestResumeWithAnotherPrincipalsCredentialsIsRefused(t *testing.T) {
	t.Parallel()
	srv, path, in := lostAnswerIntent(t)
	c, err := New(append(fastOptions(), WithBoltStore(path, nil), WithRequestEditor(bearer("tok_other_tenant")))...)
	require.NoError(t, err)
	resumed, err := c.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	_, err = c.Do(context.Background(), resumed)
	require.ErrorIs(t, err, ErrCredentialsMismatch)
	assert.NotContains(t, err.Error(), testToken, "errors never hold a credential")
	assert.Equal(t, 1, srv.PaymentCount())
	assert.Empty(t, srv.Payments("tok_other_tenant"))

	require.NoError(t, c.Close())

	// With the intent's own credentials, the server replays the charge.
	ok := newTestClient(t, WithBoltStore(path, nil), WithRequestEditor(bearer(testToken)))
	resp, err := ok.Do(context.Background(), resumed)
	require.NoError(t, err)
	assert.True(t, IsReplay(resp))
	assert.Equal(t, 1, srv.PaymentCount())
}

// Two tenants of one service may use one business name when WithPrincipal
// names the tenant: each gets an intent of its own, and neither is told
// the other's payment is its own. Under the default principal, which
// cannot tell another tenant from a refreshed token, the second Begin is
// refused instead (TestRefreshedCredentialsAreAmbiguous).
func TestBusinessNamesAreScopedByPrincipal(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	tenant := func(r *http.Request) (string, error) { return r.Header.Get("Authorization"), nil }
	c := newTestClient(t, WithPrincipal(tenant))
	reqA := paymentRequest(t, srv.URL, 1000, "order-42")
	reqB := paymentRequest(t, srv.URL, 1000, "order-42")
	reqB.Header.Set("Authorization", "Bearer tok_tenant_b")
	a := begin(t, c, "order-42/payment", reqA)
	b := begin(t, c, "order-42/payment", reqB)
	require.NotEqual(t, a.Key, b.Key, "one intent per principal")
	assert.Equal(t, "order-42/payment", a.Name)
	assert.Equal(t, "order-42/payment", b.Name)
	assert.NotEqual(t, a.Principal, b.Principal)

	_, err := c.Do(context.Background(), a)
	require.NoError(t, err)
	resp, err := c.Do(context.Background(), b)
	require.NoError(t, err)
	assert.False(t, IsReplay(resp), "tenant B's payment is its own")
	assert.Len(t, srv.Payments(testToken), 1)
	assert.Len(t, srv.Payments("tok_tenant_b"), 1)

	again := begin(t, c, "order-42/payment", paymentRequest(t, srv.URL, 1000, "order-42"))
	assert.Equal(t, a.Key, again.Key, "within one principal a name still finds its intent")
}

// WithPrincipal names the account, so a rotated token of the same account
// resumes the intent, while another account's is still refused.
func TestWithPrincipalLetsRotatedCredentialsResume(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	account := func(r *http.Request) (string, error) {
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
	store := keystore.NewMemory()
	first := newTestClient(t, WithStore(nopCloseStore{store}), WithPrincipal(account), WithMaxAttempts(1))
	req := paymentRequest(t, srv.URL, 500, "rotated")
	req.Header.Set("Authorization", "Bearer acct_1.v1")
	in := begin(t, first, "rotate/payment", req)

	other := newTestClient(t, WithStore(nopCloseStore{store}), WithPrincipal(account), WithRequestEditor(bearer("acct_2.v1")))
	_, err := other.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrCredentialsMismatch)

	rotated := newTestClient(t, WithStore(nopCloseStore{store}), WithPrincipal(account), WithRequestEditor(bearer("acct_1.v2")))
	_, err = rotated.Do(context.Background(), in)
	require.NoError(t, err, "the same account, a new token")
	assert.Len(t, srv.Payments("acct_1.v2"), 1)
}

// The keystore holds a keyed fingerprint of the principal, never the
// credential, and another key gives another fingerprint.
func TestPrincipalFingerprintIsKeyed(t *testing.T) {
	t.Parallel()
	a := newTestClient(t)
	b := newTestClient(t, WithPrincipalKey([]byte("0123456789abcdef-secret")))
	ina := begin(t, a, "", paymentRequest(t, "https://api.example.com", 1, "fp"))
	inb := begin(t, b, "", paymentRequest(t, "https://api.example.com", 1, "fp"))
	assert.Len(t, ina.Principal, 32)
	assert.NotContains(t, ina.Principal, testToken)
	assert.NotEqual(t, ina.Principal, inb.Principal)
	_, err := New(WithPrincipalKey([]byte("short")))
	assert.Error(t, err)
}
