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

// runNestedModule runs `go test ./...` in internal/<dir>, a module of its
// own (so what it drives is never idem's dependency), bounded by limit.
// `go test ./...` does not enter a nested module, so the main module's
// tests run it: with the race detector when the caller has it, with the
// caller's module proxy (a fresh machine downloads the module's
// dependencies) and environment (IDEM_TEST_POSTGRES and the like). what
// names the tests in messages.
func runNestedModule(t *testing.T, dir, what string, limit time.Duration) {
	goTool := testenv.GoCommand(t, "run "+what+", a module of its own")
	root, _ := repository(t)
	args := []string{"test", "-count=1", "-timeout", (limit - time.Minute).String()}
	if raceEnabled {
		args = append(args, "-race")
	}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append(args, "./...")...)
	cmd.Dir = filepath.Join(root, "internal", dir)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go %v in %s did not finish within %s:\n%s", args, cmd.Dir, limit, out)
	}
	if err != nil {
		t.Fatalf("%s failed (go %v in %s): %v\n%s", what, args, cmd.Dir, err, out)
	}
	t.Logf("%s", out)
}
