package truthtest

import (
	"strconv"
	"testing"
)

// A 202 proves the server took the request; a 4xx to a GET of its
// operation proves nothing about the operation, so the intent must not be
// recorded Failed (nor the caller told ErrFinalFailure) while the ledger
// holds the payment.
func TestTruthRegression_PollRefusalAfterAccepted(t *testing.T) {
	for _, status := range []int{400, 405, 406, 409, 422} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			expectTrue(t, Scenario{
				Dialect: "draft", MaxAttempts: 1,
				Moves: []Move{accepted(true)},
				Polls: []Poll{{Kind: PollStatus, Status: status, Body: 9, RetryAfter: -1}},
				Steps: []Step{{Kind: StepNew}},
			})
		})
	}
}
