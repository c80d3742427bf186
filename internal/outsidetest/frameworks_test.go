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

// frameworksTimeout bounds the framework matrix's go test, its first
// build of chi, echo and gin included.
const frameworksTimeout = 9 * time.Minute

// TestFrameworkMatrix runs the tests of internal/frameworks, a module of
// its own (so chi, echo and gin are never idem's dependencies) that
// mounts the server layer in ServeMux, chi, echo and gin with compression
// and http.TimeoutHandler on either side of it, and SIGKILLs the service
// mid-load. `go test ./...` does not enter a nested module, so this test
// runs it: with the race detector when this test has it, with the
// caller's module proxy (a fresh machine downloads the frameworks) and
// IDEM_TEST_POSTGRES (the pgstore cells skip without it).
func TestFrameworkMatrix(t *testing.T) {
	goTool := testenv.GoCommand(t, "run the framework matrix, a module of its own")
	root, _ := repository(t)
	args := []string{"test", "-count=1", "-timeout", (frameworksTimeout - time.Minute).String()}
	if raceEnabled {
		args = append(args, "-race")
	}
	if testing.Verbose() {
		args = append(args, "-v")
	}
	ctx, cancel := context.WithTimeout(t.Context(), frameworksTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append(args, "./...")...)
	cmd.Dir = filepath.Join(root, "internal", "frameworks")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go %v in %s did not finish within %s:\n%s", args, cmd.Dir, frameworksTimeout, out)
	}
	if err != nil {
		t.Fatalf("the framework matrix failed (go %v in %s): %v\n%s", args, cmd.Dir, err, out)
	}
	t.Logf("%s", out)
}
