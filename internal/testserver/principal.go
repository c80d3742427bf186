package testserver

import (
	"crypto/rand"
	"net/http"
	"sync"

	"github.com/idemkit/idem/server"
)

// AnonymousPrincipal is the principal of a request without Authorization.
// No bearer token, not even "anonymous", shares it: a token's principal
// always starts with "bearer:".
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

// principalFunc is the server's principal: server.BearerPrincipal under
// key. A malformed Authorization header is an error (the caller answers
// 401), never a silent anonymous.
func principalFunc(key []byte) server.PrincipalFunc {
	return server.BearerPrincipal(key)
}

// PrincipalOf returns the principal the server gives requests carrying
// "Authorization: Bearer <token>", or AnonymousPrincipal for "": what
// its store holds payments under.
func (s *Server) PrincipalOf(token string) string {
	r := &http.Request{Header: http.Header{}}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	p, err := s.principal(r)
	if err != nil {
		return "invalid token"
	}
	return p
}
