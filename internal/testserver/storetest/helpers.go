package storetest

import (
	"crypto/rand"
	"time"

	"github.com/idemkit/idem/internal/testserver"
)

// Durations the payments cases hold keys for, as in server/storetest.
const (
	longLease     = time.Hour
	longRetention = time.Hour
)

// NewPayment returns a succeeded payment of principal with a fresh id,
// created now to the microsecond, the finest time every store keeps.
func NewPayment(principal string) testserver.Payment {
	return testserver.Payment{
		ID: "pay_" + rand.Text(), Principal: principal, Amount: 100, Currency: "EUR",
		Status: "succeeded", Created: time.Now().UTC().Truncate(time.Microsecond),
	}
}
