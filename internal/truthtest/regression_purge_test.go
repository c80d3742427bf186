package truthtest

import "testing"

// A purge must not delete an Expired intent whose outcome is unknown: the
// program's re-run would begin the name again under a new key and pay
// again.
func TestTruthRegression_PurgeForgetsUnknownOutcome(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "draft", Bolt: true, MaxAttempts: 1, Retention: shortRetention,
		Moves: []Move{lostAfterEffect(FaultReset)},
		Steps: []Step{
			{Kind: StepNew},
			{Kind: StepWait, Wait: shortRetention + shortRetention/2},
			{Kind: StepRerun, I: 0}, // Expired: not resent
			{Kind: StepPurge},
			{Kind: StepRerun, I: 0},
		},
	})
}
