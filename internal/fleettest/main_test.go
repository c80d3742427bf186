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
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// postgresDSN returns the test database, or skips the test.
func postgresDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("IDEM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("IDEM_TEST_POSTGRES is not set; set it to a PostgreSQL URL " +
			"(e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the fleet tests")
	}
	return dsn
}

// newSchema names a schema of the test's own and drops it when the test
// ends, after the processes using it have stopped.
func newSchema(t *testing.T, dsn string) string {
	t.Helper()
	name := "idem_fleet_" + strings.ToLower(rand.Text()[:12])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}
