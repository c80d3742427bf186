package outsidetest

import (
	"testing"
	"time"
)

// TestPeerBench runs internal/peerbench, the payments app on Fiber v2
// that bench/cmd/serverbench -peers measures idem against: its tests
// check that Fiber's idempotency middleware replays on its memory
// storage, on Postgres and on Redis (those two skip without their
// URLs). The bound covers the first build of Fiber.
func TestPeerBench(t *testing.T) {
	runNestedModule(t, "peerbench", "the Fiber peer server tests", 9*time.Minute)
}
