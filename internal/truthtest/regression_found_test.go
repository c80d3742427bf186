package truthtest

import (
	"testing"
	"time"
)

// Square: a payment whose status is empty is no verdict; read as a plain
// resource it made an intent Succeeded with no payment made.
func TestTruthRegression_SquareEmptyStatus(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "square", MaxAttempts: 1,
		Moves: []Move{accepted(false)},
		Polls: []Poll{{Kind: PollDoc, Status: 200, Word: "", RetryAfter: -1}},
		Steps: []Step{{Kind: StepNew}},
	})
}

// A keystore wrapper (here, one whose writes stall) must not hide the
// identity check: a refreshed token re-running the name paid twice.
func TestTruthRegression_RefreshOnAWrappedKeystore(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "draft", MaxAttempts: 1, Stall: 3 * time.Millisecond,
		Moves: []Move{lostAfterEffect(FaultReset)},
		Steps: []Step{{Kind: StepNew}, {Kind: StepRefresh}, {Kind: StepRerun, I: 0}},
	})
}
