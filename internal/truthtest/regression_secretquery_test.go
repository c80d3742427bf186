package truthtest

import "testing"

// A secret query parameter must not reach the keystore, the logs or an
// error through a transport error (net/http's *url.Error carries the
// whole URL).
func TestTruthRegression_SecretQueryInTransportError(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "draft", Bolt: true, MaxAttempts: 1, SecretQuery: true,
		Moves: []Move{{Kind: LostBefore, Fault: FaultReset, RetryAfter: -1}},
		Steps: []Step{{Kind: StepNew}},
	})
}
