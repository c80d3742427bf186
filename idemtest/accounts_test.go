package idemtest_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
)

// rotatingAccounts is an account whose OAuth token was renewed: tok_v1,
// then tok_v2.
var rotatingAccounts = map[string][]string{"acct_1": {"tok_v1", "tok_v2"}, "acct_2": {"tok_other"}}

// accountPrincipal is the client side of the same accounts: it names the
// account a request's token belongs to, as a program that knows its
// tenant (or reads its token's claims) does.
func accountPrincipal(req *http.Request) (string, error) {
	for account, tokens := range rotatingAccounts {
		for _, token := range tokens {
			if req.Header.Get("Authorization") == "Bearer "+token {
				return account, nil
			}
		}
	}
	return "", errors.New("unknown token")
}

// paymentAs is the payment of order 42, sent with token.
func paymentAs(t *testing.T, url, token string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/payments",
		strings.NewReader(`{"amount":1000,"currency":"EUR","reference":"order-42"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	return req
}

// firstRunLosesTheAnswer begins the payment with tok_v1 in a client over
// the keystore at path, and loses its one attempt's answer after the
// server paid: the intent stays pending, as when the process ends there.
func firstRunLosesTheAnswer(t *testing.T, srv *idemtest.Server, path string) string {
	t.Helper()
	first, err := idem.New(idem.WithBoltStore(path, nil), idem.WithPrincipal(accountPrincipal), idem.WithMaxAttempts(1))
	require.NoError(t, err)
	defer first.Close()
	in, err := first.Begin(t.Context(), "order-42/payment", paymentAs(t, srv.URL, "tok_v1"))
	require.NoError(t, err)
	srv.LoseNextResponses(1)
	_, err = first.Do(t.Context(), in)
	require.ErrorIs(t, err, idem.ErrOutcomeUnknown)
	require.Equal(t, 1, srv.PaymentCount(), "the server paid; the client does not know")
	return in.Key
}

// The client renews its token and resends the pending intent under the
// new one: the reference server scopes by account, so the key is replayed
// and the account pays once.
func TestRefreshedTokenPaysOnceAgainstAccounts(t *testing.T) {
	t.Parallel()
	t.Run("Begin again with the renewed token", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithAccounts(rotatingAccounts))
		path := filepath.Join(t.TempDir(), "intents.db")
		key := firstRunLosesTheAnswer(t, srv, path)

		next, err := idem.New(idem.WithBoltStore(path, nil), idem.WithPrincipal(accountPrincipal))
		require.NoError(t, err)
		t.Cleanup(func() { _ = next.Close() })
		in, err := next.Begin(t.Context(), "order-42/payment", paymentAs(t, srv.URL, "tok_v2"))
		require.NoError(t, err)
		assert.Equal(t, key, in.Key, "the account's intent, with its key")
		resp, err := next.Do(t.Context(), in)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.True(t, idem.IsReplay(resp), "the server replays the payment it made")
		assert.Equal(t, 1, srv.PaymentCount(), "one payment")
		assert.Len(t, srv.Payments("tok_v2"), 1, "listed under the renewed token")
	})
	t.Run("Pending, resent by a request editor with the renewed token", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithAccounts(rotatingAccounts))
		path := filepath.Join(t.TempDir(), "intents.db")
		key := firstRunLosesTheAnswer(t, srv, path)

		next, err := idem.New(idem.WithBoltStore(path, nil), idem.WithPrincipal(accountPrincipal),
			idem.WithRequestEditor(func(_ context.Context, r *http.Request) error {
				r.Header.Set("Authorization", "Bearer tok_v2")
				return nil
			}))
		require.NoError(t, err)
		t.Cleanup(func() { _ = next.Close() })
		pending, err := next.Pending(t.Context())
		require.NoError(t, err)
		require.Len(t, pending, 1)
		require.Equal(t, key, pending[0].Key)
		resp, err := next.Do(t.Context(), pending[0])
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.True(t, idem.IsReplay(resp))
		assert.Equal(t, 1, srv.PaymentCount(), "one payment")
	})
}

// The same resend against a server that scopes keys by token (the
// reference server without WithAccounts, server.BearerPrincipal) lands in
// a new scope and pays again: why BearerPrincipal is only for credentials
// that never rotate, and why both sides must name the account.
func TestRefreshedTokenPaysTwiceWhereKeysAreScopedByToken(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	path := filepath.Join(t.TempDir(), "intents.db")
	firstRunLosesTheAnswer(t, srv, path)

	next, err := idem.New(idem.WithBoltStore(path, nil), idem.WithPrincipal(accountPrincipal))
	require.NoError(t, err)
	t.Cleanup(func() { _ = next.Close() })
	in, err := next.Begin(t.Context(), "order-42/payment", paymentAs(t, srv.URL, "tok_v2"))
	require.NoError(t, err)
	resp, err := next.Do(t.Context(), in)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.False(t, idem.IsReplay(resp))
	assert.Equal(t, 2, srv.PaymentCount(), "a server scoping by token pays twice")
}
