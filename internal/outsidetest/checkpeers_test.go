package outsidetest

import (
	"testing"
	"time"
)

// TestCheckPeers runs internal/checkpeers, which runs `idem check` twice
// against Fiber's idempotency middleware, a server written from draft-07's
// text and `idem serve`, and asserts the verdicts agree and are true to
// each server's code. The bound covers the first build of Fiber and of
// the idem command.
func TestCheckPeers(t *testing.T) {
	runNestedModule(t, "checkpeers", "the idem check peer tests", 9*time.Minute)
}
