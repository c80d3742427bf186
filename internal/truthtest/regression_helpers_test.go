package truthtest

import (
	"testing"
	"time"
)

// expectTrue plays a minimised scenario and fails with its violations and
// trace when the client's record is not true.
func expectTrue(t *testing.T, sc Scenario) {
	t.Helper()
	if res := Run(sc, t.TempDir()); res.Failed() {
		t.Errorf("%s", res)
	}
}

// accepted is a handler's 202 with a relative Location, whose operation's
// truth is effect.
func accepted(effect bool) Move {
	return Move{Kind: Honest, Status: 202, RetryAfter: -1, Location: LocRelative, Truth: effect}
}

// lostAfterEffect executes the request (201) and loses its answer.
func lostAfterEffect(f Fault) Move {
	return Move{Kind: LostAfter, Status: 201, RetryAfter: -1, Location: LocRelative, Fault: f}
}

const shortRetention = 30 * time.Millisecond
