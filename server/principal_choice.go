package server

import (
	"errors"
	"fmt"
	"net/http"
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
	case err == nil && p != "":
		return p, true
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
