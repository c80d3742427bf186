package idem

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testenv"
)

// heavyDeps are packages the client must not carry: a program that only
// wraps its http.Client pays for none of them. Each is a path prefix.
var heavyDeps = []string{
	"github.com/spf13/cobra", "github.com/spf13/pflag", // the idem command's
	"github.com/schollz/progressbar", "golang.org/x/term",
	"github.com/stretchr/testify",         // tests only
	"go.opentelemetry.io/otel/sdk",        // a program picks its own SDK
	"go.opentelemetry.io/otel/exporters/", // and exporters
	"github.com/prometheus/",
	"google.golang.org/grpc",
}

// storageDeps are database clients and embedded stores other than bbolt,
// the one storage the client carries: the Postgres keystore
// (keystore/pgkeystore) and the server's stores are packages of their
// own. Each is a path prefix.
var storageDeps = []string{
	"github.com/jackc/", "github.com/lib/pq",
	"github.com/redis/", "github.com/go-redis/",
	"github.com/go-sql-driver/", "github.com/mattn/go-sqlite3", "modernc.org/sqlite",
	"go.mongodb.org/", "github.com/dgraph-io/badger", "github.com/cockroachdb/pebble",
	"github.com/syndtr/goleveldb", "github.com/boltdb/bolt",
}

// The root package and keystore stay slim: their dependencies hold bbolt
// and none of the heavy or storage packages above.
func TestDependenciesStaySlim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	goCmd := testenv.GoCommand(t, "list dependencies")
	for _, pkg := range []string{"github.com/idemkit/idem", "github.com/idemkit/idem/keystore"} {
		deps := listDeps(t, goCmd, pkg)
		var bad []string
		for _, d := range deps {
			// database/sql stands for any SQL driver; its driver
			// package alone is interfaces that uuid implements.
			if matchesAny(d, heavyDeps) || matchesAny(d, storageDeps) || d == "database/sql" {
				bad = append(bad, d)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %s; keep it in a package of its own", pkg, strings.Join(bad, ", "))
		}
		if !slices.Contains(deps, "go.etcd.io/bbolt") {
			t.Errorf("%s no longer depends on go.etcd.io/bbolt, its durable keystore", pkg)
		}
	}
}

// The client runs its attempts itself: go-retryablehttp is only a
// contender of the benchmarks (bench/), never a dependency of the root
// package.
func TestRootDoesNotDependOnRetryablehttp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	const retryablehttp = "github.com/hashicorp/go-retryablehttp"
	goCmd := testenv.GoCommand(t, "list dependencies")
	if slices.Contains(listDeps(t, goCmd, "github.com/idemkit/idem"), retryablehttp) {
		t.Errorf("the root package depends on %s", retryablehttp)
	}
	if !testDeps(t, goCmd, "github.com/idemkit/idem/bench", retryablehttp) {
		t.Errorf("the check sees no %s in bench's tests, which use it", retryablehttp)
	}
}

// testDeps reports whether pkg's tests depend on dep.
func testDeps(t *testing.T, goCmd, pkg, dep string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goCmd, "list", "-test", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -test -deps %s: %v", pkg, err)
	}
	return slices.Contains(strings.Fields(string(out)), dep)
}

// The check above finds what it looks for: the Postgres keystore's
// package does depend on pgx.
func TestDependenciesCheckSeesPgx(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list; skipped with -short")
	}
	deps := listDeps(t, testenv.GoCommand(t, "list dependencies"), "github.com/idemkit/idem/keystore/pgkeystore")
	if !slices.Contains(deps, "github.com/jackc/pgx/v5") || !matchesAny("github.com/jackc/pgx/v5", storageDeps) {
		t.Fatalf("pgkeystore's dependencies lack pgx: %v", deps)
	}
}

// listDeps returns the import paths of pkg and everything it imports,
// test files left out.
func listDeps(t *testing.T, goCmd, pkg string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, "list", "-deps", pkg)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list -deps %s: %v: %s", pkg, err, exit.Stderr)
		}
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// matchesAny reports whether the import path s is one of prefixes: a
// prefix ending in "/" matches what lies under it, any other the package
// itself and the packages under it.
func matchesAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasSuffix(p, "/") && strings.HasPrefix(s, p) || s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}
