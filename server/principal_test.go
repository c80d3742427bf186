package server_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

func TestBearerPrincipalIsAKeyedHashNeverTheToken(t *testing.T) {
	t.Parallel()
	req := func(auth string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		return r
	}
	one := server.BearerPrincipal([]byte("one"))
	p, err := one(req("Bearer sk_live_secret"))
	require.NoError(t, err)
	assert.NotContains(t, p, "sk_live_secret")
	assert.True(t, strings.HasPrefix(p, "bearer:"))
	other, err := server.BearerPrincipal([]byte("two"))(req("Bearer sk_live_secret"))
	require.NoError(t, err)
	assert.NotEqual(t, p, other, "the hash is keyed by the secret")

	anon, err := one(req(""))
	require.ErrorIs(t, err, server.ErrUnidentified, "no Authorization names no principal")
	assert.Empty(t, anon)
	literal, err := one(req("Bearer anonymous"))
	require.NoError(t, err)
	assert.NotEqual(t, server.AnonymousPrincipal, literal, "a token spelled anonymous is not the unauthenticated caller")

	_, err = one(req("Basic dXNlcjpwYXNz"))
	assert.ErrorIs(t, err, server.ErrBadAuthorization)
}

func TestStoredScopeNeverHoldsTheToken(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := r.idem.Wrap(paymentsRoute, &countingHandler{})
	res := serve(h, post("key-1", paymentBody).withToken("sk_live_secret"))
	require.Equal(t, http.StatusCreated, res.Code)
	p, err := server.BearerPrincipal(testSecret)(post("key-1", "").withToken("sk_live_secret").request())
	require.NoError(t, err)
	rec, err := r.store.Lookup(t.Context(), server.Scope{Principal: p, Method: http.MethodPost, Route: paymentsRoute}, "key-1")
	require.NoError(t, err)
	require.NotNil(t, rec, "the record is scoped by the hash")
	assert.NotContains(t, rec.Scope.Principal, "sk_live_secret")
}

// Pooled keyed hashes give every token, from any goroutine, the HMAC a
// fresh one gives.
func TestBearerPrincipalMatchesAFreshHMACConcurrently(t *testing.T) {
	t.Parallel()
	secret := []byte("pooled-secret")
	principal := server.BearerPrincipal(secret)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				token := fmt.Sprintf("tok-%d-%d-%s", g, i, strings.Repeat("x", i%70))
				r := httptest.NewRequest(http.MethodPost, "/", nil)
				r.Header.Set("Authorization", "Bearer "+token)
				got, err := principal(r)
				if !assert.NoError(t, err) {
					return
				}
				mac := hmac.New(sha256.New, secret)
				mac.Write([]byte(token))
				assert.Equal(t, "bearer:"+hex.EncodeToString(mac.Sum(nil)), got)
			}
		}()
	}
	wg.Wait()
}
