package testserver

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync"

	"github.com/idemkit/idem/server"
)

// AnonymousPrincipal is the principal of a request without Authorization.
// No bearer token or account, not even one called "anonymous", shares it:
// a token's principal starts with "bearer:", an account's with
// "account:".
const AnonymousPrincipal = server.AnonymousPrincipal

// MinPrincipalKeyLen is the shortest key WithPrincipalKey accepts.
const MinPrincipalKeyLen = 16

// processPrincipalKey is the principal key of every server of this
// process not given one: random, so a server of another process, or this
// one restarted, puts every bearer caller in a new scope.
var processPrincipalKey = sync.OnceValue(func() []byte {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand does not fail; see newFencingToken
	return key
})

// WithPrincipalKey sets the key of the HMAC that turns a bearer token
// into the principal the server scopes keys and payments by, and stores:
// a token is never stored raw. Servers sharing a store (replicas, or one
// process and the next) must share the key: under another key every
// caller is in a new scope, where retries run again and earlier payments
// are not found. The default is a random key per process, right only for
// a memory store. A key shorter than MinPrincipalKeyLen makes New fail.
func WithPrincipalKey(key []byte) Option {
	return func(c *config) { c.principalKey = append([]byte(nil), key...) }
}

// principalFunc is the payments API's principal without WithAccounts:
// server.BearerPrincipal under key, and AnonymousPrincipal for a request
// without Authorization, as the layer gives it under server.WithAnonymous.
// A malformed Authorization header is an error (the caller answers 401),
// never a silent anonymous.
func principalFunc(key []byte) server.PrincipalFunc {
	return orAnonymous(server.BearerPrincipal(key))
}

// orAnonymous returns p, with AnonymousPrincipal for a request that names
// no principal.
func orAnonymous(p server.PrincipalFunc) server.PrincipalFunc {
	return func(r *http.Request) (string, error) {
		principal, err := p(r)
		if (err == nil && principal == "") || errors.Is(err, server.ErrUnidentified) {
			return AnonymousPrincipal, nil
		}
		return principal, err
	}
}

// layerPrincipal is the principal the idempotency layer is given: the
// account the authentication put in the context under WithAccounts
// (accounts non-nil), else the keyed hash of the bearer token. Requests
// naming none are anonymous by explicit choice (server.WithAnonymous).
func layerPrincipal(accounts accountBook, key []byte) server.PrincipalFunc {
	if accounts != nil {
		return server.AccountFromContext(accountCtxKey{})
	}
	return server.BearerPrincipal(key)
}

// PrincipalOf returns the principal the server gives requests carrying
// "Authorization: Bearer <token>" (the account's under WithAccounts), or
// AnonymousPrincipal for "": what its store holds payments under.
func (s *Server) PrincipalOf(token string) string {
	r := &http.Request{Header: http.Header{}}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if s.accounts != nil {
		var err error
		if r, err = s.accounts.authenticate(r.WithContext(context.Background())); err != nil {
			return "invalid token"
		}
	}
	p, err := orAnonymous(s.principal)(r)
	if err != nil {
		return "invalid token"
	}
	return p
}

// tokenHeaderPrincipal is p for a request whose access token travels in
// the header name (Shopify's X-Shopify-Access-Token) rather than in
// Authorization: the token is read as if it were a bearer token, so it is
// keyed and scoped the same way. A request without the header goes to p
// as it is; an empty name returns p.
func tokenHeaderPrincipal(name string, p server.PrincipalFunc) server.PrincipalFunc {
	if name == "" {
		return p
	}
	return func(r *http.Request) (string, error) {
		token := r.Header.Get(name)
		if token == "" {
			return p(r)
		}
		as := r.Clone(r.Context())
		as.Header = http.Header{"Authorization": {"Bearer " + token}}
		return p(as)
	}
}
