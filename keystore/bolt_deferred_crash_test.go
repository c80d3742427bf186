package keystore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// The deferred-settle crash test re-executes the test binary as a child
// that pays without pause through a client on a bbolt keystore (settles
// deferred), and SIGKILLs it at a random moment, round after round.
const (
	envDeferChild = "IDEM_TEST_DEFER_CRASH_CHILD"
	envDeferURL   = "IDEM_TEST_DEFER_CRASH_URL"
	envDeferDB    = "IDEM_TEST_DEFER_CRASH_DB"
	envDeferRound = "IDEM_TEST_DEFER_CRASH_ROUND"
	deferWorkers  = 8
)

func deferPayment(t *testing.T, url, ref string) *http.Request {
	body := fmt.Sprintf(`{"amount": 1000, "currency": "EUR", "reference": %q}`, ref)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// TestDeferredCrashChild is the child: workers Begin and Do payments
// until the kill. It does nothing in a normal run.
func TestDeferredCrashChild(t *testing.T) {
	if os.Getenv(envDeferChild) != "1" {
		t.Skip("runs only as the child of TestDeferredSettleSurvivesSIGKILL")
	}
	c, err := idem.New(idem.WithBoltStore(os.Getenv(envDeferDB), nil))
	require.NoError(t, err)
	url, round := os.Getenv(envDeferURL), os.Getenv(envDeferRound)
	fmt.Println("ready")
	for w := range deferWorkers {
		go func() {
			for i := 0; ; i++ {
				name := fmt.Sprintf("round-%s/worker-%d/payment-%d", round, w, i)
				in, err := c.Begin(context.Background(), name, deferPayment(t, url, name))
				if err != nil {
					panic(err)
				}
				resp, err := c.Do(context.Background(), in)
				if err != nil {
					panic(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				fmt.Println("settled", name) // Do returned: the settle is deferred
			}
		}()
	}
	select {} // until SIGKILL
}

func TestDeferredSettleSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	t.Parallel()
	srv, err := idemtest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "intents.db")
	ctx := context.Background()

	const rounds = 6
	var replays, fresh, lost int
	for round := range rounds {
		settled := killChildAtRandom(t, srv.URL, path, round)

		// Resume with the same keys: a settle the kill lost is Pending
		// again, and the server must replay it.
		paidBefore := quiescentPayments(srv) // the server may still finish the child's last requests
		c, err := idem.New(idem.WithBoltStore(path, nil))
		require.NoError(t, err)
		pending, err := c.Pending(ctx)
		require.NoError(t, err)
		roundReplays, roundLost := 0, 0
		for _, in := range pending {
			if settled[in.Name] {
				roundLost++ // Do had returned: its deferred settle died with the child
			}
			resp, err := c.Do(ctx, in)
			require.NoError(t, err, in.Name)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusCreated, resp.StatusCode, in.Name)
			if idem.IsReplay(resp) {
				roundReplays++
			} else {
				require.False(t, settled[in.Name], "a lost settle is answered by the server's replay: %s", in.Name)
			}
		}
		paidByResume := srv.PaymentCount() - paidBefore
		assert.Equal(t, len(pending)-roundReplays, paidByResume,
			"a resumed intent is either a replay or paid now for the first time")
		replays += roundReplays
		fresh += paidByResume
		lost += roundLost
		t.Logf("round %d: %d pending after the kill (%d of them lost deferred settles), %d settled by replay, %d sent for the first time",
			round, len(pending), roundLost, roundReplays, paidByResume)

		// Every intent is settled, and paid exactly once.
		all, err := c.Pending(ctx)
		require.NoError(t, err)
		assert.Empty(t, all, "nothing left pending after the resume")
		require.NoError(t, c.Close())
		total := assertPaidOnce(t, srv, path)
		t.Logf("round %d: %d intents in the keystore, %d payments", round, total, srv.PaymentCount())
	}
	t.Logf("over %d rounds: %d resumed intents settled by replay (%d of them lost deferred settles), %d unsent intents paid on resume",
		rounds, replays, lost, fresh)
}

// killChildAtRandom runs the child on path against url and SIGKILLs it
// at a random moment of its run. It returns the intents whose Do had
// returned in the child.
func killChildAtRandom(t *testing.T, url, path string, round int) map[string]bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeferredCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envDeferChild+"=1", envDeferURL+"="+url,
		envDeferDB+"="+path, fmt.Sprintf("%s=%d", envDeferRound, round))
	lines := testenv.KillAtRandom(t, cmd, 20*time.Millisecond, 300*time.Millisecond)
	settled := map[string]bool{}
	for _, line := range lines {
		if name, ok := strings.CutPrefix(line, "settled "); ok {
			settled[name] = true
		}
	}
	return settled
}

// quiescentPayments waits until the server's payment count has held
// still for a while, then returns it.
func quiescentPayments(srv *idemtest.Server) int {
	n := srv.PaymentCount()
	for {
		time.Sleep(100 * time.Millisecond)
		m := srv.PaymentCount()
		if m == n {
			return n
		}
		n = m
	}
}

// assertPaidOnce checks that each intent in the keystore at path is
// settled and that the server holds exactly one payment per intent.
func assertPaidOnce(t *testing.T, srv *idemtest.Server, path string) int {
	t.Helper()
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	defer s.Close()
	recs, err := s.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	for _, r := range recs {
		require.Equal(t, keystore.Succeeded, r.State, r.Name)
	}
	payments := srv.Payments("")
	refs := map[string]int{}
	for _, p := range payments {
		refs[p.Reference]++
	}
	for ref, n := range refs {
		require.Equal(t, 1, n, "paid %d times: %s", n, ref)
	}
	require.Equal(t, len(recs), srv.PaymentCount(), "one payment per intent")
	require.Len(t, refs, len(recs))
	return len(recs)
}
