// Package stripemock holds tests that drive idem's client with
// dialect.Stripe() against stripe-mock, Stripe's own mock of its API.
package stripemock
