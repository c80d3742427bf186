package server

import (
	"context"
	"fmt"
	"net/http"
)

// ContextPrincipal returns a PrincipalFunc that scopes keys by the account
// the app's own authentication put in the request's context: account
// returns it, and false when the request is not authenticated (then it
// names no principal, see WithAnonymous). The principal is "account:" and
// the id, so it stays the same across every credential of the account: a
// renewed OAuth token, a rotated API key, a new session cookie. Run the
// layer after the authentication middleware, so the account is there.
func ContextPrincipal(account func(ctx context.Context) (string, bool)) PrincipalFunc {
	return func(r *http.Request) (string, error) {
		id, ok := account(r.Context())
		if !ok || id == "" {
			return "", errNoAccount
		}
		return "account:" + id, nil
	}
}

// AccountFromContext is ContextPrincipal for an account id the app's
// authentication stored with context.WithValue(ctx, key, id): a string, or
// a value with a String method (a typed id). A value of another type is an
// error, answered 401, rather than a guess.
func AccountFromContext(key any) PrincipalFunc {
	return func(r *http.Request) (string, error) {
		var id string
		switch v := r.Context().Value(key).(type) {
		case nil:
			return "", errNoAccount
		case string:
			id = v
		case fmt.Stringer:
			id = v.String()
		default:
			return "", fmt.Errorf("server: the account in the request context is a %T, want a string or a fmt.Stringer", v)
		}
		if id == "" {
			return "", errNoAccount
		}
		return "account:" + id, nil
	}
}

// errNoAccount is ErrUnidentified for a request whose context holds no
// account.
var errNoAccount = &unidentifiedError{what: "the request is not authenticated"}
