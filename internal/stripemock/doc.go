// Package stripemock holds tests that drive idem's client with
// dialect.Stripe() against stripe-mock (github.com/stripe/stripe-mock),
// Stripe's mock of its API, built by the tests at the version this
// module's tool directive pins: form-encoded creates, stripe-mock's error
// envelopes, and an answer lost in a proxy, with stripe-go v85 beside
// idem to compare verdicts. stripe-mock keeps no idempotency keys, so the
// tests show the client's side (the key sent, the same key resent, the
// answer stored as it came) and not Stripe's replays. It is a module of
// its own so neither is a dependency of idem; the main module's go test
// runs it (internal/outsidetest).
package stripemock
