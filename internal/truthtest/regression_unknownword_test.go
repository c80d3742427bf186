package truthtest

import "testing"

// An operation status word its dialect does not document proves nothing:
// the intent must stay unsettled, not Succeeded, when the operation made no
// payment.
func TestTruthRegression_UnknownStatusWord(t *testing.T) {
	words := []string{"expired", "denied", "refused", "timed_out", "reversed", "returned",
		"unknown", "blocked", "voided", "on_hold", "requires_action", "partially_failed"}
	for _, d := range dialectNames {
		for _, w := range words {
			if wordTruth(d, w) != 0 {
				continue // documented by this dialect
			}
			t.Run(d+"/"+w, func(t *testing.T) {
				expectTrue(t, Scenario{
					Dialect: d, MaxAttempts: 1,
					Moves: []Move{accepted(false)},
					Polls: []Poll{{Kind: PollDoc, Status: 200, Word: w, RetryAfter: -1}},
					Steps: []Step{{Kind: StepNew}},
				})
			})
		}
	}
}

// Adyen: a resultCode Adyen does not list, even one that reads as "still
// running" elsewhere, is no success.
func TestTruthRegression_AdyenUnlistedResultCode(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "adyen", MaxAttempts: 1,
		Moves: []Move{accepted(false)},
		Polls: []Poll{{Kind: PollDoc, Status: 200, Word: "processing", RetryAfter: -1}},
		Steps: []Step{{Kind: StepNew}},
	})
}
