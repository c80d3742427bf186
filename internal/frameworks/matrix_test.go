package frameworks

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// Sizes of one cell's load, tuned so the whole matrix stays within about
// a minute on two busy cores, race detector included. IDEM_MATRIX_DUPS
// sets the duplicates per key (20 to 50 is the range worth trying).
const (
	matrixDups        = 20 // concurrent duplicates of each payment key
	matrixRefused     = 6  // refused keys, each run by its every duplicate
	matrixRefusedDups = 5
	matrixTimeout     = 250 * time.Millisecond
	matrixSlowFor     = 600 * time.Millisecond
	// The lease outlasts the slow handler many times over on a busy
	// machine, so no key is taken over from a handler still running; a
	// reservation left by a Reserve the request's deadline cut short
	// holds its key for a lease, and the load outlasts two.
	matrixLease    = 5 * time.Second
	matrixDeadline = 15 * time.Second // for one cell's load
)

func matrixDupCount(t *testing.T) int {
	if s := os.Getenv("IDEM_MATRIX_DUPS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("IDEM_MATRIX_DUPS=%q: want a positive number", s)
		}
		return n
	}
	return matrixDups
}

// TestMatrix runs every framework with every placement of compression
// and http.TimeoutHandler, on the memory store and on pgstore, each cell
// under concurrent duplicates of payments of every kind, and holds it to
// the layer's promises (load_test.go's rules).
func TestMatrix(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		runMatrix(t, func(t *testing.T) server.Store {
			s := server.NewMemoryStore()
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
	t.Run("pgstore", func(t *testing.T) {
		if os.Getenv("IDEM_TEST_POSTGRES") == "" {
			t.Skip("set IDEM_TEST_POSTGRES to run the matrix on pgstore")
		}
		dsn := testenv.PostgresDSN(t)
		schema := testenv.PostgresSchema(t, dsn, "frameworks_")
		store, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema), pgstore.WithMaxConns(24))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { store.Close() })
		runMatrix(t, func(*testing.T) server.Store { return store })
	})
}

func runMatrix(t *testing.T, newStore func(*testing.T) server.Store) {
	dups := matrixDupCount(t)
	for _, framework := range AllFrameworks {
		for _, placement := range AllPlacements {
			t.Run(framework+"/"+placement, func(t *testing.T) {
				// A stack that writes after the layer races on the
				// layer's writer; run alone, the race detector's report
				// fails this cell and no other.
				if !LateErrors(framework) {
					t.Parallel()
				}
				runCell(t, newStore(t), framework, placement, dups)
			})
		}
	}
}

// runCell serves one stack and holds it to every invariant.
func runCell(t *testing.T, store server.Store, framework, placement string, dups int) {
	logs := &layerLog{}
	opts := append(LayerOptions(placement, matrixLease), server.WithLogger(slog.New(logs)))
	layer, err := server.New(store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ledger := &CountingLedger{}
	pay := &Payments{Ledger: ledger, SlowFor: matrixSlowFor}
	h, err := Stack{Framework: framework, Placement: placement, Layer: layer, Payments: pay, Timeout: matrixTimeout}.Handler()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	keys := planKeys(framework+"-"+placement, 1, dups, matrixRefused, matrixRefusedDups)
	l := newLoad(keys, func() string { return srv.URL })
	l.broken = func(key string) bool { return ledger.Count(key) > 1 }
	ctx, cancel := context.WithTimeout(t.Context(), matrixDeadline)
	defer cancel()
	var f findings
	l.run(ctx)
	// A handler the layer stopped waiting for may still be running: its
	// effect counts too.
	waitIdle(t, pay)
	l.check(&f, ledger.Count, LateErrors(framework))
	t.Log(l.summary())
	f.report(t)
	if t.Failed() {
		logs.report(t)
	}
}

// waitIdle waits, within a bound, until no payment is running.
func waitIdle(t *testing.T, pay *Payments) {
	deadline := time.Now().Add(5 * time.Second)
	for pay.Running() > 0 {
		if time.Now().After(deadline) {
			t.Errorf("%d payments still running 5s after the load ended", pay.Running())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
