package testserver

import (
	"net/http"

	"github.com/idemkit/idem/server"
)

// AnonymousPrincipal is the principal of a request without Authorization.
const AnonymousPrincipal = server.AnonymousPrincipal

// Principal returns who the request acts for in the reference API: the
// bearer token itself, or AnonymousPrincipal when there is no
// Authorization header. A malformed header is an error (the caller
// answers 401), never a silent anonymous. The reference server scopes
// keys by it as it always has; package server's default hashes it.
func Principal(r *http.Request) (string, error) {
	token, err := server.BearerToken(r)
	if err != nil {
		return "", err
	}
	if token == "" {
		return AnonymousPrincipal, nil
	}
	return token, nil
}
