package testserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/idemkit/idem/server"
)

// ErrUnknownToken is the answer (401) to a bearer token that names no
// account of a server given WithAccounts.
var ErrUnknownToken = errors.New("the bearer token names no account of this server")

// WithAccounts makes the server authenticate as an API with accounts
// does: accounts maps each account id to its bearer tokens, and any of
// them names the account. Keys and payments are scoped by account
// (server.AccountFromContext), so a client that renews its token and
// retries under the new one is replayed, never paid twice. A token not
// listed is answered 401; a request without Authorization stays
// AnonymousPrincipal. Without WithAccounts every token is its own
// principal (server.BearerPrincipal). An account without tokens, a token
// listed twice, or one that is not 1–255 visible ASCII characters makes
// New fail.
func WithAccounts(accounts map[string][]string) Option {
	return func(c *config) {
		c.accounts = make(map[string][]string, len(accounts))
		for account, tokens := range accounts {
			c.accounts[account] = slices.Clone(tokens)
		}
	}
}

// accountCtxKey is where the server's authentication puts the account.
type accountCtxKey struct{}

// accountBook maps each bearer token to its account.
type accountBook map[string]string

// newAccountBook checks accounts and indexes them by token.
func newAccountBook(accounts map[string][]string) (accountBook, error) {
	book := make(accountBook)
	var errs []error
	for _, account := range slices.Sorted(maps.Keys(accounts)) {
		tokens := accounts[account]
		if account == "" || !isVisibleASCII(account) || len(account) > 255 {
			errs = append(errs, fmt.Errorf("account id %q must be 1-255 visible ASCII characters", account))
		}
		if len(tokens) == 0 {
			errs = append(errs, fmt.Errorf("account %q has no token", account))
		}
		for i, token := range tokens {
			if token == "" || !isVisibleASCII(token) || len(token) > 255 {
				errs = append(errs, fmt.Errorf("token %d of account %q must be 1-255 visible ASCII characters", i+1, account))
				continue
			}
			if other, dup := book[token]; dup {
				errs = append(errs, fmt.Errorf("token %d of account %q is also a token of account %q", i+1, account, other))
				continue
			}
			book[token] = account
		}
	}
	return book, errors.Join(errs...)
}

// authenticate returns r with the account its bearer token names in its
// context; r as is when it has no Authorization. A malformed header is
// server.ErrBadAuthorization, an unlisted token ErrUnknownToken.
func (b accountBook) authenticate(r *http.Request) (*http.Request, error) {
	token, err := server.BearerToken(r)
	if err != nil || token == "" {
		return r, err
	}
	account, ok := b[token]
	if !ok {
		return r, ErrUnknownToken
	}
	return r.WithContext(context.WithValue(r.Context(), accountCtxKey{}, account)), nil
}

// authenticated is the authentication middleware of the API's routes
// under WithAccounts; without it (b nil) it is next itself.
func (b accountBook) authenticated(next http.Handler) http.Handler {
	if b == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, err := b.authenticate(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", "Bearer")
			WriteProblem(w, http.StatusUnauthorized, ProblemUnauthorized, "Unauthorized", err.Error(), 0)
			return
		}
		next.ServeHTTP(w, r)
	})
}
