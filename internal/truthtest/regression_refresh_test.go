package truthtest

import "testing"

// A renewed token for the same account must not make the same business
// name a new intent with a new key: the server scopes keys by account and
// pays again.
func TestTruthRegression_RefreshedTokenPaysTwice(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "draft", MaxAttempts: 1,
		Moves: []Move{lostAfterEffect(FaultReset)},
		Steps: []Step{{Kind: StepNew}, {Kind: StepRefresh}, {Kind: StepRerun, I: 0}},
	})
}
