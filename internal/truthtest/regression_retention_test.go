package truthtest

import (
	"strings"
	"testing"
	"time"
)

// A Do begun inside the key retention must not send a retry once the
// server may have forgotten the key: here the first attempt is executed
// and every answer held past the attempt timeout (40 ms), and the server
// forgets the key after the retention (50–99 ms), so a retry that reaches
// it later would be executed again. Retries that end, at worst, inside the retention are
// sent and replayed. Below 40 ms no attempt may be sent at all.
func TestTruthRegression_RetryPastRetention(t *testing.T) {
	for _, retention := range []time.Duration{shortRetention, 50 * time.Millisecond, 70 * time.Millisecond, 99 * time.Millisecond} {
		t.Run(retention.String(), func(t *testing.T) {
			sc := Scenario{
				Dialect: "draft", MaxAttempts: 5, Retention: retention,
				// Every answer, the replays too, is held past the timeout.
				Moves: slowAnswers(5),
				Steps: []Step{{Kind: StepNew}},
			}
			// Whether the first attempt goes out depends on how long the
			// machine took to begin the intent; under load, play again (a
			// bounded number of times) until it did, so the retry is tested.
			for try := 0; ; try++ {
				d := newDriver(sc, t.TempDir())
				d.run()
				res := d.check()
				d.srv.Close()
				if res.Failed() {
					t.Fatalf("%s", res)
				}
				// A retry that reached the server after the retention was
				// executed again: a second effect, which check reports.
				posts := sentPosts(d.srv.Trace())
				if retention < attemptTimeout {
					if posts != 0 {
						t.Fatalf("an attempt was sent with %s of retention, less than its timeout:\n%s", retention, res)
					}
					return
				}
				if posts >= 1 {
					return
				}
				if try == 20 {
					t.Skipf("in 20 runs the first attempt never went out within %s of retention (machine too loaded)", retention)
				}
			}
		})
	}
}

// slowAnswers are n attempts executed (or replayed) whose answers are held
// past the attempt timeout.
func slowAnswers(n int) []Move {
	moves := make([]Move, n)
	for i := range moves {
		moves[i] = lostAfterEffect(FaultDelay)
	}
	return moves
}

// sentPosts counts the POSTs a server's trace shows.
func sentPosts(trace []string) int {
	n := 0
	for _, l := range trace {
		if strings.HasPrefix(l, "POST ") {
			n++
		}
	}
	return n
}

// TestTruthGeneratorCoversShortRetention: the scenarios TestTruth plays
// from its fixed seed include key retentions from 40 to 99 ms, where the
// first attempt goes out and a retry would outlive the retention, and
// below 40 ms, where none may go out.
func TestTruthGeneratorCoversShortRetention(t *testing.T) {
	fixed, _ := truthBudget()
	var below, within, late int
	for i := range fixed {
		sc := Generate(NewRandSource(uint64(fixedSeed + i)))
		switch r := sc.Retention; {
		case r == 0:
		case r < 40*time.Millisecond:
			below++
		case r < 100*time.Millisecond:
			within++
			if r >= 80*time.Millisecond {
				late++
			}
		default:
			t.Errorf("seed %d: retention %s, want below 100 ms", fixedSeed+i, r)
		}
	}
	t.Logf("%d scenarios: %d with a retention below 40 ms, %d from 40 to 99 ms (%d from 80 ms)", fixed, below, within, late)
	if within < fixed/20 || late == 0 || below == 0 {
		t.Errorf("retentions: %d below 40 ms, %d from 40 to 99 ms (%d from 80 ms) in %d scenarios", below, within, late, fixed)
	}
}
