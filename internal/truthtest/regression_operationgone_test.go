package truthtest

import (
	"strconv"
	"testing"
)

// An accepted operation that answers 404 or 410 after the grace is gone
// from the server; what became of the payment is unknown, so the intent
// must not be recorded Failed while the ledger holds the payment.
func TestTruthRegression_OperationGone(t *testing.T) {
	for _, status := range []int{404, 410} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			expectTrue(t, Scenario{
				Dialect: "draft", MaxAttempts: 1,
				Moves: []Move{accepted(true)},
				Polls: []Poll{{Kind: PollStatus, Status: status, Body: 1, RetryAfter: -1}},
				Steps: []Step{{Kind: StepNew}},
			})
		})
	}
}
