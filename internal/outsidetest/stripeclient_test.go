package outsidetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testenv"
)

// stripeClientTimeout bounds the stripe-go module's go test, its first
// build of stripe-go included.
const stripeClientTimeout = 6 * time.Minute

// TestStripeGoClient runs the tests of internal/stripeclient, a module of
// its own (so stripe-go is never idem's dependency) that drives the
// reference server's Stripe dialect with stripe-go and asserts the
// verdicts stripe-go gives: a lost answer, a 5xx, a key reused on another
// body, a duplicate while the first runs. `go test ./...` does not enter a
// nested module, so this test runs it: with the race detector when this
// test has it, with the caller's module proxy (a fresh machine downloads
// stripe-go).
func TestStripeGoClient(t *testing.T) {
	goTool := testenv.GoCommand(t, "run the stripe-go client tests, a module of their own")
	root, _ := repository(t)
	args := []string{"test", "-count=1", "-timeout", (stripeClientTimeout - time.Minute).String()}
	if raceEnabled {
		args = append(args, "-race")
	}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	ctx, cancel := context.WithTimeout(t.Context(), stripeClientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append(args, "./...")...)
	cmd.Dir = filepath.Join(root, "internal", "stripeclient")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go %v in %s did not finish within %s:\n%s", args, cmd.Dir, stripeClientTimeout, out)
	}
	if err != nil {
		t.Fatalf("the stripe-go client tests failed (go %v in %s): %v\n%s", args, cmd.Dir, err, out)
	}
	t.Logf("%s", out)
}
