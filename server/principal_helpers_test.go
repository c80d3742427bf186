package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// requestWith returns a request whose context holds v at key and whose
// Authorization is auth ("" for none).
func requestWith(key, v any, auth string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	if key != nil {
		r = r.WithContext(context.WithValue(r.Context(), key, v))
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	return r
}

type typedAccount int

func (a typedAccount) String() string { return "typed-" + string(rune('0'+a)) }

// namedClaims is a named map type, as golang-jwt's MapClaims is.
type namedClaims map[string]any

func TestAccountFromContextTakesStringsAndStringers(t *testing.T) {
	t.Parallel()
	p := server.AccountFromContext(accountCtxKey{})
	got, err := p(requestWith(accountCtxKey{}, "acct_1", ""))
	require.NoError(t, err)
	assert.Equal(t, "account:acct_1", got)
	got, err = p(requestWith(accountCtxKey{}, typedAccount(7), ""))
	require.NoError(t, err)
	assert.Equal(t, "account:typed-7", got)
	_, err = p(requestWith(nil, nil, "Bearer x"))
	assert.ErrorIs(t, err, server.ErrUnidentified)
	_, err = p(requestWith(accountCtxKey{}, "", ""))
	assert.ErrorIs(t, err, server.ErrUnidentified)
	_, err = p(requestWith(accountCtxKey{}, 42, ""))
	require.Error(t, err)
	assert.NotErrorIs(t, err, server.ErrUnidentified, "a wrong type is a bug, never anonymous")
	assert.Contains(t, err.Error(), "int")
}

func TestJWTClaimPrincipalReadsEveryNamedClaim(t *testing.T) {
	t.Parallel()
	claims := server.ClaimsFromContext(claimsCtxKey{})
	p := server.JWTClaimPrincipal(claims, "iss", "sub")
	got, err := p(requestWith(claimsCtxKey{}, namedClaims{"iss": "https://id.example", "sub": "u1"}, ""))
	require.NoError(t, err)
	assert.Equal(t, `jwt:iss="https://id.example";sub="u1"`, got)
	_, err = p(requestWith(claimsCtxKey{}, map[string]any{"sub": "u1"}, ""))
	assert.ErrorIs(t, err, server.ErrMissingClaim, "every named claim is required")
	_, err = p(requestWith(claimsCtxKey{}, map[string]any{"iss": "i", "sub": ""}, ""))
	assert.ErrorIs(t, err, server.ErrMissingClaim, "an empty subject names nobody")
	_, err = p(requestWith(claimsCtxKey{}, "not claims", ""))
	require.Error(t, err)
	assert.NotErrorIs(t, err, server.ErrUnidentified)
	_, err = p(requestWith(nil, nil, ""))
	assert.ErrorIs(t, err, server.ErrUnidentified)

	// Numbers are written in full, never in exponent form.
	byTenant := server.JWTClaimPrincipal(server.UnverifiedBearerClaims, "tenant_id")
	got, err = byTenant(requestWith(nil, nil, "Bearer "+mintJWT(t, map[string]any{"tenant_id": 12345678901234567})))
	require.NoError(t, err)
	assert.Equal(t, `jwt:tenant_id="12345678901234567"`, got)
	got, err = server.JWTClaimPrincipal(claims)(requestWith(claimsCtxKey{}, map[string]any{"sub": 1e21}, ""))
	require.NoError(t, err)
	assert.Equal(t, `jwt:sub="1000000000000000000000"`, got, "sub is the default claim")
}

func TestUnverifiedBearerClaimsRefusesWhatIsNotAJWT(t *testing.T) {
	t.Parallel()
	for name, auth := range map[string]string{
		"opaque":         "Bearer opaque",
		"two parts":      "Bearer a.b",
		"bad base64":     "Bearer a.!!!.c",
		"array payload":  "Bearer e30." + "WzFd" + ".c",
		"trailing bytes": "Bearer e30." + "e30gWw" + ".c",
		"string payload": "Bearer e30." + "ImEi" + ".c",
	} {
		_, err := server.UnverifiedBearerClaims(requestWith(nil, nil, auth))
		assert.ErrorIs(t, err, server.ErrBadToken, name)
	}
	_, err := server.UnverifiedBearerClaims(requestWith(nil, nil, "Basic dXNlcjpwYXNz"))
	assert.ErrorIs(t, err, server.ErrBadAuthorization)
	_, err = server.UnverifiedBearerClaims(requestWith(nil, nil, ""))
	assert.ErrorIs(t, err, server.ErrUnidentified)
	claims, err := server.UnverifiedBearerClaims(requestWith(nil, nil, "Bearer e30.eyJzdWIiOiJ1MSJ9.sig"))
	require.NoError(t, err)
	assert.Equal(t, "u1", claims["sub"])
}
