package saga_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore/pgkeystore"
	"github.com/idemkit/idem/saga"
)

// The crash test re-executes the test binary as a child that drives one
// run against the parent's server, SIGKILLs it at a boundary of the run,
// and resumes the run in the parent from the bbolt file the child left.
const (
	envCrashChild = "IDEM_SAGA_CRASH_CHILD"
	envCrashURL   = "IDEM_SAGA_CRASH_URL"
	envCrashDB    = "IDEM_SAGA_CRASH_DB"
	envCrashRun   = "IDEM_SAGA_CRASH_RUN"
	envCrashFail  = "IDEM_SAGA_CRASH_FAIL"
	// envCrashPGSchema, when set, makes the child keep its runs in that
	// schema of IDEM_TEST_POSTGRES instead of the bbolt file.
	envCrashPGSchema = "IDEM_SAGA_CRASH_PG_SCHEMA"
	// envCrashRounds multiplies the rounds of TestCrashAtBoundaries (1
	// by default: every boundary once, for a run that completes and one
	// that compensates).
	envCrashRounds = "IDEM_SAGA_CRASH_ROUNDS"
)

// crashWorkflow is the program both the child and the parent run: a
// charge (refunded on failure), a local reservation, a shipment, then
// Complete, or, with fail, a shipment the provider refuses and Fail. Only
// a refusal fails the run; any other error (another worker holds a
// step, the outcome is not known yet) is returned and the run goes on
// later. mark announces each boundary before it is crossed.
func crashWorkflow(ctx context.Context, r *saga.Run, url string, fail bool, mark func(string)) error {
	mark("charge")
	_, err := r.Step(ctx, "charge", mustReq(url, 1000, "charge-"+r.ID()), saga.Compensate(refund(url)))
	if err == nil {
		mark("reserve")
		_, err = r.Local(ctx, "reserve", func(context.Context) ([]byte, error) { return []byte(`{"slot":1}`), nil })
	}
	if err == nil {
		mark("ship")
		amount := 500
		if fail {
			amount = 0 // refused: nothing shipped
		}
		_, err = r.Step(ctx, "ship", mustReq(url, amount, "ship-"+r.ID()), saga.Compensate(refund(url)))
	}
	mark("end")
	switch {
	case errors.Is(err, idem.ErrFinalFailure):
		return r.Fail(ctx, err)
	case err != nil:
		return err
	}
	return r.Complete(ctx)
}

// crashKeystore is where a crash round keeps its runs: a bbolt file, or
// a Postgres schema (pgSchema non-empty) that the child and the parent
// share as two workers of a fleet.
type crashKeystore struct {
	boltPath, pgSchema string
}

// client opens the keystore in a new client; a Postgres one claims with
// a short lease, so the parent takes over the killed child's claims soon.
func (k crashKeystore) client(t testing.TB, opts ...idem.Option) *idem.Client {
	t.Helper()
	if k.pgSchema == "" {
		return boltClient(t, k.boltPath, opts...)
	}
	store, err := pgkeystore.Open(context.Background(), testenv.PostgresDSN(t), &pgkeystore.Options{Schema: k.pgSchema})
	require.NoError(t, err)
	c, err := idem.New(append(append(fastOptions(), idem.WithStore(store), idem.WithClaimLease(crashClaimLease)), opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// crashClaimLease is the lease of the Postgres crash rounds' claims.
const crashClaimLease = 300 * time.Millisecond

// TestCrashChild is the child's run; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envCrashChild) != "1" {
		t.Skip("runs only as the child of TestCrashAtBoundaries")
	}
	c := crashKeystore{boltPath: os.Getenv(envCrashDB), pgSchema: os.Getenv(envCrashPGSchema)}.client(t)
	s, err := saga.New(c)
	require.NoError(t, err)
	ctx := context.Background()
	fmt.Println("ready")
	r, err := s.Run(ctx, os.Getenv(envCrashRun))
	require.NoError(t, err)
	mark := func(m string) { fmt.Println("at", m) }
	require.NoError(t, crashWorkflow(ctx, r, os.Getenv(envCrashURL), os.Getenv(envCrashFail) == "1", mark))
	fmt.Println("done")
	select {} // wait for the kill
}

// crashPoint is where a round kills the child: once it has announced
// marker, after delay (inside the server's handler delay when a request
// is in flight), or at a random time after "ready" when random.
type crashPoint struct {
	marker string
	delay  time.Duration
	random bool
}

var crashPoints = []crashPoint{
	{marker: "ready"}, // while the run is created
	{marker: "at charge", delay: 15 * time.Millisecond}, // the charge in flight
	{marker: "at reserve"},                              // charged, the reservation being stored
	{marker: "at ship", delay: 15 * time.Millisecond},   // the shipment in flight
	{marker: "at end", delay: 15 * time.Millisecond},    // completing, or the refund in flight
	{marker: "ready", random: true},                     // anywhere
}

// Every boundary of a run, SIGKILLed, then resumed from the bbolt file:
// each run ends Completed (one charge, one shipment) or Compensated (one
// charge, one refund, nothing shipped); none is stuck, nothing is paid
// twice.
func TestCrashAtBoundaries(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	t.Parallel()
	crashBoundaries(t, func(t *testing.T) crashKeystore {
		return crashKeystore{boltPath: filepath.Join(t.TempDir(), "keys.db")}
	})
}

// The same on the Postgres keystore, the child and the parent two
// workers of a fleet: the parent takes up the killed child's runs once
// its claims run out.
func TestCrashAtBoundariesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_sagacrash_")
	crashBoundaries(t, func(*testing.T) crashKeystore { return crashKeystore{pgSchema: schema} })
}

// crashBoundaries plays every crash point for a run that completes and
// one that compensates, envCrashRounds times, each run in the keystore
// keystoreFor gives.
func crashBoundaries(t *testing.T, keystoreFor func(t *testing.T) crashKeystore) {
	rounds := 1
	if v := os.Getenv(envCrashRounds); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, envCrashRounds)
		rounds = n
	}
	srv := idemtest.NewServer(t)
	var kills, finishedFirst, compensated, completed, busy int
	var reconciled atomic.Int64
	for round := range rounds {
		for i, p := range crashPoints {
			for _, fail := range []bool{false, true} {
				id := fmt.Sprintf("run-%d-%d-%t", round, i, fail)
				ks := keystoreFor(t)
				srv.SetHandlerDelay(40 * time.Millisecond)
				if crashRound(t, srv, ks, id, fail, p) {
					finishedFirst++
				}
				kills++
				srv.SetHandlerDelay(0)
				require.Eventually(t, func() bool { return srv.Holding() == 0 }, 5*time.Second, 5*time.Millisecond,
					"the server finished the killed child's request")

				// Resume in a new client on the keystore the child left.
				c := ks.client(t, idem.WithReconciler(ledgerReconciler(srv, &reconciled)))
				s, err := saga.New(c)
				require.NoError(t, err)
				r, err := s.Run(context.Background(), id)
				require.NoError(t, err)
				// The killed child's claims (Postgres) run out within
				// their lease; until then its steps are busy.
				deadline := time.Now().Add(20 * crashClaimLease)
				for {
					err = crashWorkflow(context.Background(), r, srv.URL, fail, func(string) {})
					if !errors.Is(err, idem.ErrIntentBusy) || time.Now().After(deadline) {
						break
					}
					busy++
					time.Sleep(crashClaimLease / 5)
				}
				require.NoError(t, err, id)
				require.NoError(t, c.Close())

				assert.Equal(t, 1, effects(srv, "charge-"+id), "%s: one charge", id)
				if fail {
					assert.Equal(t, saga.Compensated, r.State(), id)
					assert.Equal(t, 1, effects(srv, "refund-charge-"+id), "%s: one refund", id)
					assert.Zero(t, effects(srv, "ship-"+id), id)
					compensated++
				} else {
					assert.Equal(t, saga.Completed, r.State(), id)
					assert.Equal(t, 1, effects(srv, "ship-"+id), "%s: one shipment", id)
					assert.Zero(t, effects(srv, "refund-charge-"+id), id)
					completed++
				}
			}
		}
	}
	t.Logf("%d runs SIGKILLed (%d had finished before the kill); %d completed, %d compensated after resume; %d steps settled by the ledger reconciler; %d resumes waited for a dead worker's claim",
		kills, finishedFirst, completed, compensated, reconciled.Load(), busy)
}

// ledgerReconciler settles, from the server's ledger, a step whose
// outcome a resend cannot prove: a shipment the provider refuses after
// an attempt that died with the child (a 400 then proves nothing of the
// earlier attempt). The reference of the step's payment follows from its
// intent's name (saga/<run>/<step>[/compensation]); the proof is the
// payment itself, fetched by id, or its absence from the ledger once no
// request holds the key.
func ledgerReconciler(srv *idemtest.Server, n *atomic.Int64) idem.Reconciler {
	return func(ctx context.Context, in *idem.Intent) (idem.Reconciliation, error) {
		n.Add(1)
		parts := strings.Split(in.Name, "/")
		if len(parts) < 3 || parts[0] != "saga" {
			return idem.Reconciliation{}, fmt.Errorf("not a saga intent: %q", in.Name)
		}
		ref := parts[2] + "-" + parts[1]
		if len(parts) == 4 {
			ref = "refund-" + ref
		}
		for _, p := range srv.Payments(testToken) {
			if p.Reference != ref {
				continue
			}
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/payments/"+p.ID, nil)
			if err != nil {
				return idem.Reconciliation{}, err
			}
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return idem.Reconciliation{}, err
			}
			return idem.Reconciliation{Outcome: idem.OutcomeSucceeded, Evidence: "ledger: payment " + p.ID, Response: resp}, nil
		}
		return idem.Reconciliation{Outcome: idem.OutcomeFailed, Evidence: "ledger: no payment referenced " + ref}, nil
	}
}

// crashRound runs the child for one run, kills it at p, and reports
// whether the child had finished its run before the kill.
func crashRound(t *testing.T, srv *idemtest.Server, ks crashKeystore, id string, fail bool, p crashPoint) bool {
	t.Helper()
	failEnv := "0"
	if fail {
		failEnv = "1"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashURL+"="+srv.URL, envCrashDB+"="+ks.boltPath,
		envCrashPGSchema+"="+ks.pgSchema, envCrashRun+"="+id, envCrashFail+"="+failEnv)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	done := false
	deadline := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() }) // bounds the wait for a marker
	defer deadline.Stop()
	for lines.Scan() {
		line := lines.Text()
		done = done || line == "done"
		if line == p.marker {
			break
		}
	}
	delay := p.delay
	if p.random {
		delay = rand.N(300 * time.Millisecond)
	}
	time.Sleep(delay)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	// Whatever the child printed before it died.
	rest, _ := io.ReadAll(stdout)
	done = done || strings.Contains(string(rest), "done\n")
	err = cmd.Wait()
	killed = true
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the child died of the kill: %v", err)
	require.NotContains(t, string(rest), "--- FAIL", "the child failed before the kill")
	return done
}
