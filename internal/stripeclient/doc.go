// Package stripeclient holds tests that drive the reference server's
// Stripe dialect (idemtest.WithDialect("stripe"), `idem serve --dialect
// stripe`) with stripe-go, Stripe's own Go library, and assert the verdict
// stripe-go itself gives: what it retries, with which key, and the error
// it reports. It is a module of its own so stripe-go is never a dependency
// of idem; the main module's go test runs it (internal/outsidetest).
package stripeclient
