package idemtest

import (
	"log/slog"
	"time"

	"github.com/idemkit/idem/internal/testserver"
)

// config holds the options of NewServer and Start.
type config struct {
	opts []testserver.Option
}

// Option configures NewServer and Start.
type Option func(*config)

// WithRetention sets how long the server replays a completed key (default
// 24 h). Pair it with WithClock to test what happens after it.
func WithRetention(d time.Duration) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerRetention(d)) }
}

// WithLease sets how long a key stays reserved before a retry may take it
// over (default 30 s). It must last 3 × the store timeout
// (WithStoreTimeout).
func WithLease(d time.Duration) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerLease(d)) }
}

// WithStoreTimeout bounds each call the server makes to its store, and
// the transaction that commits a payment with its key (default 3 s). The
// lease must last server.MinLease of it: 3 × the store timeout.
func WithStoreTimeout(d time.Duration) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerStoreTimeout(d)) }
}

// WithPayoutDelay sets how long a payout stays pending before its
// operation succeeds (default 2 s; 0 settles at once).
func WithPayoutDelay(d time.Duration) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithPayoutDelay(d)) }
}

// WithStore5xx makes 5xx answers final and replayed, as Stripe's v1 API
// does. By default a 5xx frees the key so a retry runs again.
func WithStore5xx(store bool) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerStore5xx(store)) }
}

// WithLogger sets where the server logs (keys as short hashes, never
// bodies). Nil, the default, is silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerLogger(l)) }
}

// WithClock makes the server read time from now, for leases, retention,
// payment times and payout settling. Advance it to expire keys or settle
// payouts without sleeping.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerClock(now)) }
}

// WithMaxBody sets the largest request body the server reads (default
// 1 MiB); larger ones are answered 413.
func WithMaxBody(n int64) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerMaxBody(n)) }
}

// WithDialect makes the server speak a provider's idempotency dialect
// instead of this project's: "stripe", "stripe-v2", "paypal", "adyen",
// "square", "checkout" (Checkout.com) or the default "idem"
// (testserver.DialectNames lists them). Each is simulated
// from the provider's documentation: where the key travels (a header, or
// Square's idempotency_key body field), its length limit, the provider's
// error documents for a missing, reused or in-flight key, what is replayed
// and how long keys are kept (unless WithRetention or WithStore5xx say
// otherwise). Test a client against the provider it will talk to without
// the provider's sandbox. An unknown name fails NewServer (and Start
// returns an error naming the known ones).
func WithDialect(name string) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithServerDialect(name)) }
}

// WithAccounts makes the server authenticate by account, as an API whose
// OAuth tokens are renewed does: accounts maps each account id to its
// bearer tokens, any of which names it. Keys and payments are scoped by
// account, so a retry under a renewed token of the same account is
// replayed and never pays twice: test a client that refreshes its token
// (name the account with idem.WithPrincipal). Other tokens are answered
// 401; requests without Authorization stay AnonymousPrincipal. Without
// it, every token is its own principal. A token listed twice, or an
// account without tokens, fails NewServer.
func WithAccounts(accounts map[string][]string) Option {
	return func(c *config) { c.opts = append(c.opts, testserver.WithAccounts(accounts)) }
}
