package pgstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
)

// effectStoreTimeout is the store timeout of the server under test: the
// bound on the transaction that commits a payment with its key.
const effectStoreTimeout = 300 * time.Millisecond

// A lock on the payments table held by another connection cannot hold
// requests: each payment's transaction gives up at the store timeout,
// rolls back, and the client gets 503 with Retry-After; the key is freed
// (or, when a store call outlasts the store timeout on a loaded machine,
// stays reserved until its lease ends and a retry gets 409 meanwhile),
// so once the lock is gone each key pays once.
func TestEffectTransactionIsBoundedByTheStoreTimeout(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	store := openStore(t, dsn, schema)
	logs := &testenv.SyncBuffer{}
	srv, err := testserver.New(testserver.WithStore(store),
		testserver.WithServerStoreTimeout(effectStoreTimeout), testserver.WithServerLease(3*effectStoreTimeout),
		testserver.WithServerLogger(slog.New(slog.NewTextHandler(logs, nil))))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); _ = srv.Close() })
	// Far beyond the bound: a request still waiting then is a hang.
	client := &http.Client{Timeout: 30 * time.Second}

	locker, err := pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer locker.Close(context.Background())
	tx, err := locker.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), "LOCK TABLE "+pgx.Identifier{schema, "payments"}.Sanitize()+" IN EXCLUSIVE MODE")
	require.NoError(t, err)

	const requests = 4
	var wg sync.WaitGroup
	answers := make([]*http.Response, requests)
	bodies := make([]string, requests)
	took := make([]time.Duration, requests)
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			answers[i], bodies[i] = pay(t, client, ts.URL, fmt.Sprintf("k-locked-%d", i))
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i, resp := range answers {
		require.NotNil(t, resp, "request %d did not end", i)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "request %d: %s", i, bodies[i])
		assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
		assert.NotEmpty(t, resp.Header.Get("Retry-After"))
		assert.Contains(t, bodies[i], testserver.ProblemStoreUnavailable)
		t.Logf("request %d answered %d after %s (store timeout %s)", i, resp.StatusCode, took[i].Round(time.Millisecond), effectStoreTimeout)
	}
	n, err := store.CountPayments(t.Context())
	require.NoError(t, err)
	assert.Zero(t, n, "no payment committed while the table was locked")

	require.NoError(t, tx.Rollback(t.Context()))
	for i := range requests {
		key := fmt.Sprintf("k-locked-%d", i)
		first, body := payPastInProgress(t, client, ts.URL, key, logs)
		require.Equal(t, http.StatusCreated, first.StatusCode, "the key was released: the retry runs: %s", body)
		again, againBody := pay(t, client, ts.URL, key)
		require.Equal(t, http.StatusCreated, again.StatusCode)
		assert.Equal(t, "true", again.Header.Get(testserver.ReplayedHeader))
		assert.Equal(t, body, againBody)
	}
	n, err = store.CountPayments(t.Context())
	require.NoError(t, err)
	assert.Equal(t, requests, n, "one payment per key")
}

// payPastInProgress pays with key as a client does after a 503: it
// retries while the answer is 409 /in-progress (the key still reserved
// until its lease ends, when the release after the 503 did not finish
// within the store timeout, or a reservation the layer gave up on
// committed after all), within a bound far beyond the lease, and returns
// the first other answer.
//
// A 409 is accepted only when the server's log says a store call failed
// (a release, or a reservation): a key kept after the handler said it
// ran nothing is the fault this test is for.
func payPastInProgress(t *testing.T, client *http.Client, base, key string, logs *testenv.SyncBuffer) (*http.Response, string) {
	t.Helper()
	give := time.Now().Add(30 * time.Second)
	for {
		resp, body := pay(t, client, base, key)
		if resp == nil || resp.StatusCode != http.StatusConflict || time.Now().After(give) {
			return resp, body
		}
		require.Contains(t, body, testserver.ProblemInProgress, "a 409 other than in-progress")
		if l := logs.String(); !strings.Contains(l, "could not release the key") &&
			!strings.Contains(l, "idempotency store unavailable") {
			t.Fatalf("%s is still reserved, though no store call failed: the key of a 503 that ran nothing must be freed", key)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pay sends one payment with key and returns the answer and its body; a
// request that fails returns nil.
func pay(t *testing.T, client *http.Client, base, key string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/v1/payments",
		strings.NewReader(`{"amount":100,"currency":"EUR"}`))
	if err != nil {
		t.Error(err)
		return nil, ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(testserver.KeyHeader, key)
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("payment %s: %v", key, err)
		return nil, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}
