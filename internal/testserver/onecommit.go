package testserver

import (
	"fmt"
	"net/http"

	"github.com/idemkit/idem/server"
)

// WithOneCommit guards POST /v1/payments and POST /v1/payouts in
// one-commit mode (server.Middleware.WrapOneCommit): the key's record,
// the payment or operation and the answer commit as one transaction of
// the store's database. The store must be a server.OneCommitStore (the
// Postgres store); New refuses any other with server.ErrOneCommitUnsupported.
func WithOneCommit() Option { return func(c *config) { c.oneCommit = true } }

// checkOneCommit refuses one-commit mode on a store that cannot.
func (c *config) checkOneCommit() error {
	if !c.oneCommit {
		return nil
	}
	if _, ok := c.store.(server.OneCommitStore); !ok {
		name := "the memory store"
		if c.store != nil {
			name = fmt.Sprintf("%T", c.store)
		}
		return fmt.Errorf("testserver: one-commit mode on %s: %w", name, server.ErrOneCommitUnsupported)
	}
	return nil
}

// wrapGuarded puts the idempotency layer in front of h at route: in
// one-commit mode for the routes whose every effect is a row of the
// store's database, else as Wrap does.
func wrapGuarded(idem *server.Middleware, oneCommit bool, route string, h http.Handler) http.Handler {
	if oneCommit && (route == routePayments || route == routePayouts) {
		if wrapped, err := idem.WrapOneCommit(route, h); err == nil {
			return wrapped
		}
		// New checked the store (checkOneCommit): not reached.
	}
	return idem.Wrap(route, h)
}
