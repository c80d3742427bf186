package testserver

import (
	"errors"
	"net/http"
	"strings"
)

// AnonymousPrincipal is the principal of a request without Authorization.
const AnonymousPrincipal = "anonymous"

// errBadAuthorization is returned for an Authorization header that is not
// a well-formed bearer token.
var errBadAuthorization = errors.New("authorization must be 'Bearer <token>' with 1-255 visible ASCII characters")

// Principal returns who the request acts for: the bearer token, or
// AnonymousPrincipal when there is no Authorization header. A malformed
// header is an error (the caller answers 401), never a silent anonymous.
func Principal(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return AnonymousPrincipal, nil
	case 1:
	default:
		return "", errBadAuthorization
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errBadAuthorization
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 255 {
		return "", errBadAuthorization
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return "", errBadAuthorization
		}
	}
	return token, nil
}
