package outsidetest

import (
	"testing"
	"time"
)

// TestStripeMock runs internal/stripemock, which builds stripe-mock
// (Stripe's mock of its API, pinned by that module's tool directive) and
// drives idem's client with dialect.Stripe() against it: form-encoded
// creates, its error envelopes, and a lost answer through a proxy. The
// bound covers the first build of stripe-mock.
func TestStripeMock(t *testing.T) {
	runNestedModule(t, "stripemock", "the stripe-mock tests", 6*time.Minute)
}
