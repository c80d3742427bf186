package truthtest

import "testing"

// A Do begun inside the key retention must not send a retry once the
// server may have forgotten the key: here the first attempt is executed
// and its answer held past the attempt timeout (40 ms), which is past the
// retention (30 ms), and the server executes the retry again.
func TestTruthRegression_RetryPastRetention(t *testing.T) {
	expectTrue(t, Scenario{
		Dialect: "draft", MaxAttempts: 2, Retention: shortRetention,
		Moves: []Move{lostAfterEffect(FaultDelay)},
		Steps: []Step{{Kind: StepNew}},
	})
}
