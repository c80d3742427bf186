package truthtest

import "testing"

// Adyen authenticates with X-API-Key: under dialect.Adyen it is a secret
// by default, never written to the keystore.
func TestTruthRegression_AdyenAPIKeyStored(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "adyen", Bolt: true, MaxAttempts: 1,
		Steps: []Step{{Kind: StepNew}},
	})
}

// Nor is it carried on a redirect to another origin.
func TestTruthRegression_AdyenAPIKeyToOtherOrigin(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "adyen", MaxAttempts: 1,
		Moves: []Move{{Kind: Gateway, Status: 307, Body: 0, RetryAfter: -1, Location: LocOtherOrigin}},
		Steps: []Step{{Kind: StepNew}},
	})
}
