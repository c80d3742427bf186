package fleettest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

const (
	fleetKeys       = 200
	fleetDuplicates = 10
	fleetWorkers    = 40
	// fleetLease is the replicas' idempotency lease: a key a killed
	// replica reserved is taken over once it runs out.
	fleetLease = "2s"
	// fleetStoreTimeout bounds each store call: the lease must last three
	// of them (server.MinLease).
	fleetStoreTimeout = "600ms"
)

// startFleet starts three replicas on one Postgres schema behind a
// round-robin proxy.
func startFleet(t *testing.T) ([]*replica, *proxy) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_fleet_")
	replicas := make([]*replica, 3)
	addrs := make([]string, 3)
	for i := range replicas {
		replicas[i] = startReplica(t, "--store", dsn, "--store-schema", schema, "--lease", fleetLease, "--store-timeout", fleetStoreTimeout, "--log-level", "info")
		addrs[i] = replicas[i].addr
	}
	return replicas, startProxy(t, addrs...)
}

func newKeys(n int) []string {
	prefix := rand.Text()[:8]
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("fleet-%s-%03d", prefix, i)
	}
	return keys
}

// assertOnePaymentPerKey checks that every answer of a key names the same
// payment, that every key got one, and that the API holds exactly one
// payment per key.
func assertOnePaymentPerKey(t *testing.T, baseURL, token string, keys []string, answers []answer) {
	t.Helper()
	require.Len(t, answers, len(keys)*fleetDuplicates)
	byKey := map[string]string{}
	fresh := 0
	for _, a := range answers {
		require.NotEmpty(t, a.paymentID, "key %s got no payment", a.key)
		if prev, seen := byKey[a.key]; seen {
			assert.Equal(t, prev, a.paymentID, "every duplicate of key %s names one payment", a.key)
		}
		byKey[a.key] = a.paymentID
		if !a.replayed {
			fresh++
		}
	}
	assert.Len(t, byKey, len(keys))
	assert.LessOrEqual(t, fresh, len(keys), "at most one request per key executed (a lost answer is replayed)")
	assert.Equal(t, len(keys), paymentTotal(t, baseURL, token), "exactly one payment per key")
}

// TestReplicasOnOnePostgresPayOncePerKey: 200 keys, each sent 10 times at
// once, spread over three replicas: exactly 200 payments.
func TestReplicasOnOnePostgresPayOncePerKey(t *testing.T) {
	t.Parallel()
	_, p := startFleet(t)
	token := "tok_" + rand.Text()
	keys := newKeys(fleetKeys)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	answers := runDuplicates(ctx, t, p.URL(), token, keys, fleetDuplicates, fleetWorkers, nil)
	assertOnePaymentPerKey(t, p.URL(), token, keys, answers)
}

// TestReplicaKilledMidRunStillPaysOncePerKey kills one replica with
// SIGKILL a third of the way through: keys it held are taken over after
// the lease, the proxy skips it, and still exactly one payment per key.
func TestReplicaKilledMidRunStillPaysOncePerKey(t *testing.T) {
	t.Parallel()
	replicas, p := startFleet(t)
	victim := replicas[1]
	token := "tok_" + rand.Text()
	keys := newKeys(fleetKeys)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()

	answers := runDuplicates(ctx, t, p.URL(), token, keys, fleetDuplicates, fleetWorkers, func(done int) {
		if done == fleetKeys/3 {
			victim.kill()
		}
	})
	require.True(t, victim.wait(t), "the victim died of SIGKILL")
	assertOnePaymentPerKey(t, p.URL(), token, keys, answers)

	// No key stays locked: once the lease has run out, every key answers
	// at once with its stored payment (never 409), and nothing new is
	// paid. A 503 is the store answering slower than the store timeout
	// on a loaded host, which a client retries: so does this loop, a
	// bounded number of times.
	time.Sleep(2500 * time.Millisecond)
	client := newLoadClient()
	for _, key := range keys {
		status, replayed := postOnce(t, client, p.URL(), token, key)
		for try := 0; status == http.StatusServiceUnavailable && try < 20; try++ {
			time.Sleep(100 * time.Millisecond)
			status, replayed = postOnce(t, client, p.URL(), token, key)
		}
		require.Equal(t, http.StatusCreated, status, "key %s", key)
		require.True(t, replayed, "key %s", key)
	}
	assert.Equal(t, fleetKeys, paymentTotal(t, p.URL(), token))
}

// postOnce sends one payment request and reports its status and whether
// it was a replay.
func postOnce(t *testing.T, client *http.Client, baseURL, token, key string) (int, bool) {
	t.Helper()
	body := fmt.Sprintf(`{"amount":1000,"currency":"EUR","reference":%q}`, key)
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed") == "true"
}

// TestServerKilledBetweenCommitAndAnswerReplaysAfterRestart: the replica
// commits the payment and dies before answering; the client never hears
// back. A new process on the same Postgres replays the committed payment.
func TestServerKilledBetweenCommitAndAnswerReplaysAfterRestart(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_fleet_")
	args := []string{"--store", dsn, "--store-schema", schema}
	token := "tok_" + rand.Text()
	key := "crash-" + rand.Text()
	client := newLoadClient()

	doomed := startReplica(t, append(args, "--crash-after-commit")...)
	_, err := client.Do(paymentRequest(t, "http://"+doomed.addr, token, key))
	require.Error(t, err, "the process dies before it answers")
	require.True(t, doomed.wait(t), "the process ended by SIGKILL:\n%s", doomed.logText())

	restarted := startReplica(t, args...)
	base := "http://" + restarted.addr
	resp, err := client.Do(paymentRequest(t, base, token, key))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"), "the committed answer is replayed, not executed again")
	assert.Equal(t, 1, paymentTotal(t, base, token))
}

func paymentRequest(t *testing.T, baseURL, token, key string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments",
		strings.NewReader(`{"amount":1000,"currency":"EUR","reference":"crash"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	return req
}
