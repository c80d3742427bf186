package fleettest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

const (
	workerIntents = 60
	// workerClaimLease is short so the killed worker's claims run out
	// quickly; the survivors renew theirs while they send.
	workerClaimLease = "1s"
)

// workerProcess is this test binary running runWorker.
type workerProcess struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr bytes.Buffer
}

func startWorker(t *testing.T, dsn, schema, token string) *workerProcess {
	t.Helper()
	w := &workerProcess{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	w.cmd.Env = append(os.Environ(),
		workerEnv+"=1",
		workerDSNEnv+"="+dsn,
		workerSchemaEnv+"="+schema,
		workerTokenEnv+"="+token,
		workerLeaseEnv+"="+workerClaimLease,
	)
	w.cmd.Stdout, w.cmd.Stderr = &w.stdout, &w.stderr
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() { _ = w.cmd.Process.Kill() })
	return w
}

// settled returns the keys the worker reported settled.
func (w *workerProcess) settled() []string {
	var keys []string
	sc := bufio.NewScanner(bytes.NewReader(w.stdout.Bytes()))
	for sc.Scan() {
		if key, ok := strings.CutPrefix(sc.Text(), "settled "); ok {
			keys = append(keys, key)
		}
	}
	return keys
}

// TestWorkersResumeAfterOneWasKilled: three worker processes share one
// Postgres keystore; the first is killed with SIGKILL while it holds
// claims and has requests in flight. The two others resume everything,
// and every intent is paid exactly once, under its original key.
func TestWorkersResumeAfterOneWasKilled(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_fleet_")
	token := "tok_" + rand.Text()
	srv := idemtest.NewServer(t, idemtest.WithLease(2*time.Second), idemtest.WithStoreTimeout(600*time.Millisecond))
	keys := beginIntents(t, dsn, schema, srv.URL, token)

	// The doomed worker is slowed down so it dies with work in hand.
	srv.SetHandlerDelay(100 * time.Millisecond)
	doomed := startWorker(t, dsn, schema, token)
	require.Eventually(t, func() bool { return srv.Requests() >= 3 }, 30*time.Second, 5*time.Millisecond,
		"the doomed worker starts sending; stderr:\n%s", &doomed.stderr)
	require.NoError(t, doomed.cmd.Process.Kill())
	_ = doomed.cmd.Wait()
	srv.ClearFaults()
	require.Less(t, srv.PaymentCount(), workerIntents, "the doomed worker died with work left")

	survivors := []*workerProcess{startWorker(t, dsn, schema, token), startWorker(t, dsn, schema, token)}
	for i, w := range survivors {
		require.NoError(t, w.cmd.Wait(), "survivor %d; stderr:\n%s", i, &w.stderr)
	}

	// Each intent was reported settled by at most one survivor.
	seen := map[string]int{}
	for _, w := range survivors {
		for _, k := range w.settled() {
			seen[k]++
		}
	}
	for k, n := range seen {
		assert.Equal(t, 1, n, "intent %s settled by one worker", k)
	}
	assertPaidOnceUnderOriginalKeys(t, dsn, schema, srv, token, keys)
}

// beginIntents records workerIntents payment intents in the shared
// keystore without sending them, and returns their keys by name.
func beginIntents(t *testing.T, dsn, schema, baseURL, token string) map[string]string {
	t.Helper()
	ctx := context.Background()
	client, err := idem.New(idem.WithKeystore(ctx, dsn,
		pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema})))
	require.NoError(t, err)
	defer client.Close()
	keys := map[string]string{}
	for i := range workerIntents {
		name := fmt.Sprintf("order-%03d", i)
		body := fmt.Sprintf(`{"amount":%d,"currency":"EUR","reference":%q}`, 100+i, name)
		req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		in, err := client.Begin(ctx, name, req)
		require.NoError(t, err)
		keys[name] = in.Key
	}
	return keys
}

// assertPaidOnceUnderOriginalKeys checks the server holds one payment per
// intent, and that each intent is settled under the key Begin gave it with
// the answer naming its own payment.
func assertPaidOnceUnderOriginalKeys(t *testing.T, dsn, schema string, srv *idemtest.Server, token string, keys map[string]string) {
	t.Helper()
	payments := srv.Payments(token)
	assert.Equal(t, len(keys), srv.PaymentCount(), "payments == intents")
	byReference := map[string]string{}
	for _, p := range payments {
		_, dup := byReference[p.Reference]
		assert.False(t, dup, "reference %s paid twice", p.Reference)
		byReference[p.Reference] = p.ID
	}

	ctx := context.Background()
	ks, err := keystore.Open(ctx, dsn, pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema}))
	require.NoError(t, err)
	defer ks.Close()
	for name, key := range keys {
		rec, err := ks.Get(ctx, key)
		require.NoError(t, err, name)
		assert.Equal(t, name, keystore.BusinessName(rec.Name, rec.Principal), "%s kept its original key", name)
		require.Equal(t, keystore.Succeeded, rec.State, "%s: %s", name, rec.LastError)
		require.NotNil(t, rec.Response, name)
		var p struct{ ID string }
		require.NoError(t, json.Unmarshal(rec.Response.Body, &p), name)
		assert.Equal(t, byReference[name], p.ID, "%s answered with its own payment", name)
	}
}
