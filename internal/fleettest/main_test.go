// Package fleettest proves the exactly-once promise across processes:
// several `idem serve` replicas on one Postgres behind a round-robin
// proxy, a replica killed between its commit and its answer, and client
// workers on one Postgres keystore resuming after one of them was killed.
// Every process is real: the idem binary is built once with go build, and
// the client workers are this test binary run again in worker mode.
//
// The tests need IDEM_TEST_POSTGRES and skip without it.
package fleettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the idem binary built for this run; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(runWorker())
	}
	dir, err := os.MkdirTemp("", "idem-fleettest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleettest:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildErr  error
)

// idemBinary builds cmd/idem once per test run and returns its path.
func idemBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "idem")
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("the go tool builds the binary under test: %w", err)
			return
		}
		out, err := exec.Command(goTool, "build", "-o", bin, "github.com/idemkit/idem/cmd/idem").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bin
}
