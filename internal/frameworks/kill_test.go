package frameworks

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server/pgstore"
)

// Sizes of one SIGKILL run.
const (
	killRounds      = 4 // of the three payment kinds
	killDups        = 6 // of each payment key
	killRefused     = 3
	killRefusedDups = 4
	killRequests    = 3*killRounds*killDups + killRefused*killRefusedDups
	killLease       = 2 * time.Second
	killDeadline    = 20 * time.Second
)

// TestKillMidLoad runs the payments service of every framework as a
// child process on pgstore, each effect committed with its key's
// completion, SIGKILLs it while duplicates are in flight, starts it again
// on the same database and lets the clients resume their keys: every key
// still ends with one effect, and every answer holds to the matrix's
// rules.
func TestKillMidLoad(t *testing.T) {
	if os.Getenv("IDEM_TEST_POSTGRES") == "" {
		t.Skip("set IDEM_TEST_POSTGRES to SIGKILL the service mid-load on pgstore")
	}
	dsn := testenv.PostgresDSN(t)
	bin := paysvcBinary(t)
	for _, framework := range AllFrameworks {
		t.Run(framework, func(t *testing.T) {
			t.Parallel()
			schema := testenv.PostgresSchema(t, dsn, "frameworks_kill_")
			args := []string{"-framework", framework, "-postgres", dsn, "-schema", schema, "-lease", killLease.String()}
			first := startService(t, bin, args...)
			var url atomic.Value
			url.Store(first.url)

			keys := planKeys("kill-"+framework, killRounds, killDups, killRefused, killRefusedDups)
			l := newLoad(keys, func() string { return url.Load().(string) })
			ctx, cancel := context.WithTimeout(t.Context(), killDeadline)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				l.run(ctx)
			}()
			answeredAtKill := waitAnswered(l, killRequests/3, 3*time.Second)
			first.kill(t)
			if answeredAtKill == killRequests {
				t.Fatalf("every duplicate was answered before the kill; the kill came after the load")
			}
			second := startService(t, bin, args...)
			url.Store(second.url)
			<-done

			counts := effectCounts(t, dsn, schema)
			var f findings
			l.check(&f, func(key string) int { return counts[key] }, LateErrors(framework))
			t.Logf("%s; SIGKILL after %d of %d final answers", l.summary(), answeredAtKill, killRequests)
			f.report(t)
		})
	}
}

// waitAnswered waits until n duplicates have a final answer, or for at
// most d, and returns how many have one.
func waitAnswered(l *load, n int, d time.Duration) int {
	deadline := time.Now().Add(d)
	for {
		l.mu.Lock()
		got := 0
		for _, rs := range l.finals {
			got += len(rs)
		}
		l.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// effectCounts reads the effects the service committed in schema.
func effectCounts(t *testing.T, dsn, schema string) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	store, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ledger := &PGLedger{Store: store, Table: pgx.Identifier{schema, "effects"}.Sanitize()}
	counts, err := ledger.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return counts
}
