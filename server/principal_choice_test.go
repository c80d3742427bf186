package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// Without a principal choice New refuses, naming the helpers; the
// deprecated secret alone no longer makes the bearer token the scope.
func TestNewRefusesWithoutAPrincipalChoice(t *testing.T) {
	t.Parallel()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	for name, opts := range map[string][]server.Option{
		"no option":          nil,
		"secret alone":       {server.WithPrincipalSecret([]byte("s"))},
		"other options only": {server.WithRetention(1)},
	} {
		_, err := server.New(store, opts...)
		require.ErrorIs(t, err, server.ErrNoPrincipal, name)
		for _, helper := range []string{"AccountFromContext", "ContextPrincipal", "JWTClaimPrincipal", "BearerPrincipal", "WithAnonymous"} {
			assert.Contains(t, err.Error(), helper, name)
		}
	}
	for name, opts := range map[string][]server.Option{
		"a principal": {server.WithPrincipal(server.AccountFromContext(accountCtxKey{}))},
		"anonymous":   {server.WithAnonymous()},
	} {
		_, err := server.New(store, opts...)
		require.NoError(t, err, name)
	}
	_, err := server.New(nil, server.WithAnonymous())
	require.Error(t, err)
}

// accountCtxKey is where the test APIs' authentication puts the account.
type accountCtxKey struct{}

// claimsCtxKey is where the JWT API's authentication puts verified claims.
type claimsCtxKey struct{}

// jwtKey signs the test tokens (HS256).
var jwtKey = []byte("test jwt signing key")

// mintJWT returns an HS256 JWT carrying claims.
func mintJWT(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	signing := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + enc.EncodeToString(payload)
	mac := hmac.New(sha256.New, jwtKey)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

// verifyJWT stands for a JWT middleware: it checks the signature, refuses
// what fails (401), and puts the verified claims in the context.
func verifyJWT(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := server.BearerToken(r)
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		mac := hmac.New(sha256.New, jwtKey)
		mac.Write([]byte(parts[0] + "." + parts[1]))
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		claims, err := server.UnverifiedBearerClaims(r) // verified just above
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsCtxKey{}, claims)))
	})
}

// tokenAccounts stands for an API's authentication by token: every token
// of an account names it; other tokens are refused.
func tokenAccounts(accounts map[string]string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, _ := server.BearerToken(r)
		account, ok := accounts[token]
		if !ok {
			http.Error(w, "unknown token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accountCtxKey{}, account)))
	})
}

// postWith sends a keyed POST to url with Authorization: Bearer token.
func postWith(t *testing.T, url, key, token string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+paymentsRoute, strings.NewReader(paymentBody))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.KeyHeader, key)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for name, values := range header {
		req.Header[name] = values
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// A retry under the account's renewed token is replayed, under every
// helper that names the account: one effect.
func TestRenewedTokenIsOneEffectUnderEveryAccountHelper(t *testing.T) {
	t.Parallel()
	accounts := map[string]string{"tok_v1": "acct_1", "tok_v2": "acct_1"}
	cases := []struct {
		name      string
		principal server.PrincipalFunc
		auth      func(http.Handler) http.Handler
		v1, v2    string
	}{
		{
			name:      "AccountFromContext",
			principal: server.AccountFromContext(accountCtxKey{}),
			auth:      func(h http.Handler) http.Handler { return tokenAccounts(accounts, h) },
			v1:        "tok_v1", v2: "tok_v2",
		},
		{
			name: "ContextPrincipal",
			principal: server.ContextPrincipal(func(ctx context.Context) (string, bool) {
				a, ok := ctx.Value(accountCtxKey{}).(string)
				return a, ok
			}),
			auth: func(h http.Handler) http.Handler { return tokenAccounts(accounts, h) },
			v1:   "tok_v1", v2: "tok_v2",
		},
		{
			name:      "JWTClaimPrincipal from the verified context",
			principal: server.JWTClaimPrincipal(server.ClaimsFromContext(claimsCtxKey{}), "sub"),
			auth:      verifyJWT,
			v1:        mintJWT(t, map[string]any{"sub": "user_1", "iat": 1000}),
			v2:        mintJWT(t, map[string]any{"sub": "user_1", "iat": 4600}),
		},
		{
			name:      "JWTClaimPrincipal of the bearer token behind verification",
			principal: server.JWTClaimPrincipal(server.UnverifiedBearerClaims, "tenant_id"),
			auth:      verifyJWT,
			v1:        mintJWT(t, map[string]any{"sub": "user_1", "tenant_id": 42, "iat": 1000}),
			v2:        mintJWT(t, map[string]any{"sub": "user_2", "tenant_id": 42, "iat": 4600}),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := &countingHandler{}
			api := httptest.NewServer(tc.auth(mustNewChoice(t, server.WithPrincipal(tc.principal)).Wrap(paymentsRoute, h)))
			t.Cleanup(api.Close)

			first := postWith(t, api.URL, "order-42", tc.v1, nil)
			require.Equal(t, http.StatusCreated, first.StatusCode)
			retry := postWith(t, api.URL, "order-42", tc.v2, nil)
			require.Equal(t, http.StatusCreated, retry.StatusCode)
			assert.Equal(t, "true", retry.Header.Get(server.ReplayedHeader), "the renewed token names the same account")
			assert.Equal(t, 1, h.runs(), "one effect")
		})
	}
}

// BearerPrincipal scopes by credential, as documented: a renewed token is
// another principal. It is for credentials that never rotate.
func TestBearerPrincipalPutsARenewedTokenInANewScope(t *testing.T) {
	t.Parallel()
	h := &countingHandler{}
	layer := mustNewChoice(t, server.WithPrincipal(server.BearerPrincipal(testSecret))).Wrap(paymentsRoute, h)
	require.Equal(t, http.StatusCreated, serve(layer, post("order-42", paymentBody).withToken("tok_v1")).Code)
	again := serve(layer, post("order-42", paymentBody).withToken("tok_v1"))
	assert.True(t, replayed(again))
	renewed := serve(layer, post("order-42", paymentBody).withToken("tok_v2"))
	assert.False(t, replayed(renewed))
	assert.Equal(t, 2, h.runs())
}

// A guarded request naming no principal is refused 401 with a challenge,
// nothing runs and the key stays free, unless anonymous use is chosen.
func TestGuardedRequestWithoutPrincipalIsRefused(t *testing.T) {
	t.Parallel()
	for name, principal := range map[string]server.PrincipalFunc{
		"BearerPrincipal":    server.BearerPrincipal(testSecret),
		"AccountFromContext": server.AccountFromContext(accountCtxKey{}),
		"JWTClaimPrincipal":  server.JWTClaimPrincipal(server.ClaimsFromContext(claimsCtxKey{})),
		"empty principal":    func(*http.Request) (string, error) { return "", nil },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &countingHandler{}
			m := mustNewChoice(t, server.WithPrincipal(principal))
			layer := m.Wrap(paymentsRoute, h)
			rec := serve(layer, post("order-42", paymentBody))
			require.Equal(t, http.StatusUnauthorized, rec.Code, rec.Body.String())
			assert.Equal(t, server.ProblemUnauthorized, problemType(t, rec))
			assert.Equal(t, "Bearer", rec.Header().Get("WWW-Authenticate"))
			assert.Contains(t, rec.Body.String(), "authentication required")
			assert.Zero(t, h.runs(), "nothing runs")
		})
	}
}

// Anonymous use chosen explicitly works: requests without credentials
// share AnonymousPrincipal's scope, while credentials that are present
// but unusable are still refused.
func TestAnonymousChosenExplicitly(t *testing.T) {
	t.Parallel()
	t.Run("alone", func(t *testing.T) {
		t.Parallel()
		h := &countingHandler{}
		layer := mustNewChoice(t, server.WithAnonymous()).Wrap(paymentsRoute, h)
		require.Equal(t, http.StatusCreated, serve(layer, post("k", paymentBody)).Code)
		assert.True(t, replayed(serve(layer, post("k", paymentBody).withToken("anything"))), "one scope for every caller")
		assert.Equal(t, 1, h.runs())
	})
	t.Run("with a principal", func(t *testing.T) {
		t.Parallel()
		h := &countingHandler{}
		m := mustNewChoice(t, server.WithPrincipal(server.JWTClaimPrincipal(server.UnverifiedBearerClaims)), server.WithAnonymous())
		layer := m.Wrap(paymentsRoute, h)
		require.Equal(t, http.StatusCreated, serve(layer, post("k", paymentBody)).Code)
		assert.True(t, replayed(serve(layer, post("k", paymentBody))))
		named := serve(layer, post("k", paymentBody).withToken(mintJWT(t, map[string]any{"sub": "anonymous"})))
		assert.False(t, replayed(named), "a subject called anonymous is not the anonymous caller")
		for what, token := range map[string]string{
			"no sub claim": mintJWT(t, map[string]any{"tenant": "t1"}),
			"not a JWT":    "opaque-token",
			"sub a list":   mintJWT(t, map[string]any{"sub": []string{"a"}}),
		} {
			rec := serve(layer, post("k2", paymentBody).withToken(token))
			assert.Equal(t, http.StatusUnauthorized, rec.Code, what)
		}
		assert.Equal(t, 2, h.runs())
	})
}

// An API authenticating by session cookie names the tenant in the
// context: two tenants with one key are two effects, each replayed to its
// own tenant, and a new session of a tenant still replays.
func TestCookieAuthTenantsAreSeparatedByContextPrincipal(t *testing.T) {
	t.Parallel()
	sessions := map[string]string{"s-alice-1": "tenant_alice", "s-alice-2": "tenant_alice", "s-bob-1": "tenant_bob"}
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, err := r.Cookie("session")
			if err != nil || sessions[c.Value] == "" {
				http.Error(w, "log in", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accountCtxKey{}, sessions[c.Value])))
		})
	}
	h := &countingHandler{}
	api := httptest.NewServer(auth(mustNewChoice(t, server.WithPrincipal(server.AccountFromContext(accountCtxKey{}))).Wrap(paymentsRoute, h)))
	t.Cleanup(api.Close)
	cookie := func(s string) http.Header { return http.Header{"Cookie": {"session=" + s}} }

	alice := postWith(t, api.URL, "order-1", "", cookie("s-alice-1"))
	bob := postWith(t, api.URL, "order-1", "", cookie("s-bob-1"))
	require.Equal(t, http.StatusCreated, alice.StatusCode)
	require.Equal(t, http.StatusCreated, bob.StatusCode)
	assert.Empty(t, bob.Header.Get(server.ReplayedHeader), "bob never gets alice's answer")
	assert.NotEqual(t, alice.Header.Get("Location"), bob.Header.Get("Location"))
	aliceAgain := postWith(t, api.URL, "order-1", "", cookie("s-alice-2"))
	assert.Equal(t, "true", aliceAgain.Header.Get(server.ReplayedHeader))
	assert.Equal(t, alice.Header.Get("Location"), aliceAgain.Header.Get("Location"))
	assert.Equal(t, 2, h.runs(), "one effect per tenant")
}

// mustNewChoice is server.New over a fresh memory store with opts alone.
func mustNewChoice(t *testing.T, opts ...server.Option) *server.Middleware {
	t.Helper()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	m, err := server.New(store, opts...)
	require.NoError(t, err)
	return m
}

// A principal no store can hold alike (NUL, invalid UTF-8) is refused
// before the store is asked, never answered 503 on every retry.
// (JWTClaimPrincipal quotes claim values, so its principals are text.)
func TestPrincipalThatIsNotTextIsRefused(t *testing.T) {
	t.Parallel()
	h := &countingHandler{}
	layer := mustNewChoice(t, server.WithPrincipal(server.AccountFromContext(accountCtxKey{}))).Wrap(paymentsRoute, h)
	for _, account := range []string{"a\x00b", "\xff"} {
		r := post("k", paymentBody).request()
		r = r.WithContext(context.WithValue(r.Context(), accountCtxKey{}, account))
		rec := httptest.NewRecorder()
		layer.ServeHTTP(rec, r)
		assert.Equal(t, http.StatusUnauthorized, rec.Code, "%q", account)
		assert.Contains(t, rec.Body.String(), "UTF-8")
	}
	assert.Zero(t, h.runs())
}
