package outsidetest

import (
	"testing"
	"time"
)

// TestStripeGoClient runs internal/stripeclient, which drives the
// reference server's Stripe dialect with stripe-go and asserts the
// verdicts stripe-go gives: a lost answer, a 5xx, a key reused on another
// body, a duplicate while the first runs. The bound covers the first build
// of stripe-go.
func TestStripeGoClient(t *testing.T) {
	runNestedModule(t, "stripeclient", "the stripe-go client tests", 6*time.Minute)
}
