// Package dialect says how one provider speaks idempotency: where the key
// goes and what it may look like, how the provider tells "still in
// progress", "key reused", "replayed" and "do not retry" apart, how long it
// keeps keys, and how to read the final status of an operation document.
//
// The idem client uses a Dialect to judge every answer of a keyed request
// (idem.WithDialect); `idem check --dialect` grades a server against the
// same values. A Dialect is data plus a few small functions, so a dialect
// for an in-house API is a value built from Draft:
//
//	d := dialect.Draft()
//	d.Name = "acme"
//	d.KeyHeader = "X-Acme-Request-Id"
//	d.MaxKeyLength = 64
//
// # Verdicts
//
// Classify turns one answer into a Verdict. The verdicts are about the
// request's effect, not only about what to do next, because the client
// keeps a true record: once an attempt may have taken effect, only an
// answer that proves the outcome (Success, Accepted, KeyReused, Rejected)
// may settle the intent; a Refused answer then leaves it unsettled, to be
// resent with the same key or reconciled.
//
// Shipped dialects: Draft (the default: IETF
// draft-ietf-httpapi-idempotency-key-header-07 and this project's
// protocol), Stripe, StripeV2 (Stripe's API v2), PayPal, Adyen, Square and
// Checkout (Checkout.com). Each provider rule cites the page of the
// provider's documentation it comes from; a rule that could not be
// confirmed from a page is left out, and the Draft rules apply instead.
package dialect
