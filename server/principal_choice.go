package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

// ErrNoPrincipal is returned by New when no option says who a request acts
// for. The principal scopes every key, and no default is right for every
// API: a bearer token changes when it is renewed (a retry under the new
// one would run again), and requests without Authorization would all share
// one scope (an API authenticating by cookie or API key would put all its
// tenants in it).
var ErrNoPrincipal = errors.New("server: New needs a principal choice (who a request acts for scopes its keys): " +
	"WithPrincipal(AccountFromContext(key)) or WithPrincipal(ContextPrincipal(f)) for the account your auth middleware sets; " +
	"WithPrincipal(JWTClaimPrincipal(claims, \"sub\")) for a claim of the verified token; " +
	"WithPrincipal(BearerPrincipal(secret)) only for credentials that never rotate; " +
	"WithAnonymous() for one scope shared by every caller")

// ErrBadPrincipal is the 401 answer to a request whose principal (an
// account id, a claim) is not UTF-8 text without NUL bytes.
var ErrBadPrincipal = errors.New("the request's principal must be UTF-8 text without NUL bytes")

// isText reports whether s is UTF-8 without NUL bytes.
func isText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// unidentifiedError says why a request names no principal; it is
// ErrUnidentified.
type unidentifiedError struct{ what string }

func (e *unidentifiedError) Error() string        { return "authentication required: " + e.what }
func (e *unidentifiedError) Is(target error) bool { return target == ErrUnidentified }

// checkPrincipalChoice is New's check that the options chose a principal.
func checkPrincipalChoice(c *config) error {
	if c.principal != nil || c.anonymous {
		return nil
	}
	if c.principalSecret {
		return fmt.Errorf("%w; WithPrincipalSecret alone no longer chooses BearerPrincipal", ErrNoPrincipal)
	}
	return ErrNoPrincipal
}

// principalOf returns the scope principal of r. ok is false when it has
// answered 401: the request names no principal and anonymous callers are
// not allowed, or its credentials are unusable.
func (m *Middleware) principalOf(w http.ResponseWriter, r *http.Request) (principal string, ok bool) {
	if m.cfg.principal == nil { // WithAnonymous alone
		return AnonymousPrincipal, true
	}
	p, err := m.cfg.principal(r)
	switch {
	case err == nil && p != "" && isText(p):
		return p, true
	case err == nil && p != "":
		// Every store must hold the scope alike: PostgreSQL refuses such
		// text, which would answer 503 to every retry.
		err = ErrBadPrincipal
	case err == nil || errors.Is(err, ErrUnidentified):
		if m.cfg.anonymous {
			return AnonymousPrincipal, true
		}
		if err == nil {
			err = &unidentifiedError{what: "the request names no principal"}
		}
	}
	// RFC 9110 §15.5.2: a 401 "MUST send a WWW-Authenticate header field
	// ... containing at least one challenge applicable to the target
	// resource".
	w.Header().Set("WWW-Authenticate", "Bearer")
	WriteProblem(w, http.StatusUnauthorized, ProblemUnauthorized, "Unauthorized", err.Error(), 0)
	return "", false
}
