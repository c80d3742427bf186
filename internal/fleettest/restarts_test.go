package fleettest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// restartRounds is how many times TestServerKilledMidRequestManyTimes
// kills the server; restartLease its lease, which a killed request's key
// waits out before the next process takes it over.
const (
	restartRounds       = 8
	restartKeysPerRound = 60
	restartLease        = "1s"
	// restartStoreTimeout bounds each store call: the lease must last
	// three of them (server.MinLease).
	restartStoreTimeout = "300ms"
)

// TestServerKilledMidRequestManyTimesPaysOncePerKey runs `idem serve` on
// Postgres, whose reservations commit without waiting for the log flush,
// and SIGKILLs it at a random moment while 16 workers post payments, eight
// times over. Each process gets 60 new keys and resumes the keys no
// answer was heard for yet, each key twice at once, over and over until
// the process dies (so it always dies mid-request); a last process, after
// the lease, answers every key. Every key ends with exactly one payment,
// every answer of a key names it, and no payment exists without a key.
func TestServerKilledMidRequestManyTimesPaysOncePerKey(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_fleet_")
	args := []string{"--store", dsn, "--store-schema", schema, "--lease", restartLease, "--store-timeout", restartStoreTimeout}
	token := "tok_" + rand.Text()
	var keys []string
	seen := map[string]string{} // key → the payment its answers named
	record := func(a answer) {
		if prev, ok := seen[a.key]; ok {
			assert.Equal(t, prev, a.paymentID, "every answer of key %s names one payment", a.key)
		}
		seen[a.key] = a.paymentID
	}

	var pending []string
	kills := 0
	for round := range restartRounds {
		fresh := newKeys(restartKeysPerRound)
		keys = append(keys, fresh...)
		pending = append(pending, fresh...)
		victim := startReplica(t, args...)
		killAfter := 20*time.Millisecond + randomDuration(t, 300*time.Millisecond)
		go func() {
			time.Sleep(killAfter)
			victim.kill()
		}()
		answers := postUntilDead(t, "http://"+victim.addr, token, pending, 2, 16)
		require.True(t, victim.wait(t), "round %d: the server died of SIGKILL:\n%s", round, victim.logText())
		kills++
		answered := map[string]bool{}
		for _, a := range answers {
			record(a)
			answered[a.key] = true
		}
		var still []string
		for _, k := range pending {
			if !answered[k] {
				still = append(still, k)
			}
		}
		t.Logf("round %d: killed after %v, %d of %d pending keys answered", round, killAfter, len(pending)-len(still), len(pending))
		pending = still
	}
	require.Equal(t, restartRounds, kills)

	final := startReplica(t, args...)
	base := "http://" + final.addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := newLoadClient()
	for _, key := range keys {
		record(payUntilAnswered(ctx, t, client, base, token, key))
	}
	byReference := paymentsByReference(t, base, token)
	for _, key := range keys {
		ids := byReference[key]
		require.Len(t, ids, 1, "key %s: exactly one payment", key)
		assert.Equal(t, seen[key], ids[0], "key %s: its answers name its payment", key)
	}
	assert.Len(t, byReference, len(keys), "no payment without a key")
}

// postUntilDead posts every key dups times at once over workers
// connections, each request retried on 409 and 503, and starts over with
// the first key, until the server stops answering. It returns the 201
// answers it got.
func postUntilDead(t *testing.T, baseURL, token string, keys []string, dups, workers int) []answer {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs := make(chan string)
	var (
		mu      sync.Mutex
		answers []answer
		wg      sync.WaitGroup
	)
	client := newLoadClient()
	dead := make(chan struct{})
	var deadOnce sync.Once
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range jobs {
				a, ok := postOnceAlive(ctx, t, client, baseURL, token, key)
				if !ok {
					deadOnce.Do(func() { close(dead) })
					continue
				}
				mu.Lock()
				answers = append(answers, a)
				mu.Unlock()
			}
		}()
	}
feed:
	for ctx.Err() == nil {
		for _, key := range keys {
			for range dups {
				select {
				case jobs <- key:
				case <-dead:
					break feed
				case <-ctx.Done():
					t.Error("the server was not killed within 30s")
					break feed
				}
			}
		}
	}
	close(jobs)
	wg.Wait()
	return answers
}

// postOnceAlive posts key until it gets a 201 (ok) or the connection
// fails (not ok: the server is gone), waiting out 409 and 503.
func postOnceAlive(ctx context.Context, t *testing.T, client *http.Client, baseURL, token, key string) (answer, bool) {
	body := fmt.Sprintf(`{"amount":1000,"currency":"EUR","reference":%q}`, key)
	for ctx.Err() == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
		if err != nil {
			t.Errorf("key %s: %v", key, err)
			return answer{}, false
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			return answer{}, false
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return answer{}, false
		case resp.StatusCode == http.StatusCreated:
			var p struct{ ID string }
			if err := json.Unmarshal(raw, &p); err != nil || p.ID == "" {
				t.Errorf("key %s: 201 without a payment id: %s", key, raw)
				return answer{}, false
			}
			return answer{key: key, paymentID: p.ID, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, true
		case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusServiceUnavailable:
			sleep(ctx, retryAfter(resp.Header.Get("Retry-After")))
		default:
			t.Errorf("key %s: unexpected %d: %s", key, resp.StatusCode, raw)
			return answer{}, false
		}
	}
	return answer{}, false
}

// paymentsByReference lists token's payments, page by page, their ids
// by reference.
func paymentsByReference(t *testing.T, baseURL, token string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	after := ""
	for page := 0; ; page++ {
		require.Less(t, page, 10000, "the list ends")
		url := baseURL + "/v1/payments?limit=100"
		if after != "" {
			url += "&starting_after=" + after
		}
		req, err := http.NewRequest(http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := newLoadClient().Do(req)
		require.NoError(t, err)
		var list struct {
			HasMore bool `json:"has_more"`
			Data    []struct{ ID, Reference string }
		}
		err = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		require.NoError(t, err)
		for _, p := range list.Data {
			out[p.Reference] = append(out[p.Reference], p.ID)
		}
		if !list.HasMore || len(list.Data) == 0 {
			return out
		}
		after = list.Data[len(list.Data)-1].ID
	}
}

// randomDuration is uniform in [0, limit).
func randomDuration(t *testing.T, limit time.Duration) time.Duration {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(limit)))
	require.NoError(t, err)
	return time.Duration(n.Int64())
}
