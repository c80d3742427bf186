package ledger

import "time"

// DelayHeader is the test hook both graded servers honour: a payment
// request carrying it is held that long (a Go duration, at most MaxDelay)
// before it executes, so that `idem check --slow-header` can send a
// duplicate while the original is still running. It is no part of any
// idempotency rule.
const DelayHeader = "Test-Delay"

// MaxDelay bounds DelayHeader.
const MaxDelay = 2 * time.Second

// Delay parses a DelayHeader value: 0 when absent or unreadable, at most
// MaxDelay.
func Delay(value string) time.Duration {
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return 0
	}
	return min(d, MaxDelay)
}
