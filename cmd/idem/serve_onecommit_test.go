package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// oneCommitServer is a running `idem serve --one-commit` child process.
type oneCommitServer struct {
	cmd  *exec.Cmd
	url  string
	logs *logTail
}

func startOneCommitServer(t *testing.T, bin, dsn, schema string) *oneCommitServer {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--one-commit", "--store", dsn,
		"--store-schema", schema)
	cmd.Env = append(os.Environ(), adminTokenEnv+"=", principalKeyEnv+"=one-commit-test-principal-key-0123456789")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	logs := tailLog(stderr)
	exited := make(chan error, 1)
	return &oneCommitServer{cmd: cmd, url: logs.waitAddr(t, exited), logs: logs}
}

// postPayment posts the payment of key (its reference is the key) and
// returns the status and the payment id of a 201.
func postPayment(client *http.Client, url, key string) (int, string, error) {
	body := fmt.Sprintf(`{"amount":1000,"currency":"EUR","reference":%q}`, key)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url+"/v1/payments", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tenant")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var p struct{ ID string }
	if resp.StatusCode == http.StatusCreated {
		if err := json.Unmarshal(b, &p); err != nil {
			return 0, "", fmt.Errorf("201 body %q: %w", b, err)
		}
	}
	return resp.StatusCode, p.ID, nil
}

// SIGKILL of `idem serve --one-commit` under load, then a restart on the
// same schema: every key has at most one payment, every acknowledged
// answer's payment is there, and each acknowledged key replays it.
func TestServe_OneCommitSurvivesSIGKILLWithOnePaymentPerKey(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemtest_onecommit_")
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool builds the binary under test")
	bin := filepath.Join(t.TempDir(), "idem")
	out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	var current atomic.Pointer[oneCommitServer]
	current.Store(startOneCommitServer(t, bin, dsn, schema))
	client := &http.Client{Timeout: 20 * time.Second}

	const workers = 8
	var (
		mu       sync.Mutex
		acked    = map[string]string{} // key → payment id answered
		acks     atomic.Int64
		stop     atomic.Bool
		failures []string
	)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				key := fmt.Sprintf("k-%d-%d", w, i)
				// Retry the key until it is answered, across the kill.
				for deadline := time.Now().Add(90 * time.Second); ; {
					if time.Now().After(deadline) {
						mu.Lock()
						failures = append(failures, key+": never answered 201")
						mu.Unlock()
						return
					}
					status, id, err := postPayment(client, current.Load().url, key)
					if err == nil && status == http.StatusCreated {
						mu.Lock()
						acked[key] = id
						mu.Unlock()
						acks.Add(1)
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	waitAcks := func(n int64) {
		for deadline := time.Now().Add(90 * time.Second); acks.Load() < n; {
			if time.Now().After(deadline) {
				t.Errorf("only %d of %d answers in 90 s", acks.Load(), n)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitAcks(100)
	first := current.Load()
	require.NoError(t, first.cmd.Process.Kill(), "SIGKILL mid-load")
	_ = first.cmd.Wait()
	current.Store(startOneCommitServer(t, bin, dsn, schema))
	waitAcks(acks.Load() + 100)
	stop.Store(true)
	wg.Wait()
	require.Empty(t, failures)

	conn, err := pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	payments := pgx.Identifier{schema, "payments"}.Sanitize()
	rows, err := conn.Query(t.Context(), "SELECT reference, id FROM "+payments)
	require.NoError(t, err)
	byKey := map[string][]string{}
	for rows.Next() {
		var ref, id string
		require.NoError(t, rows.Scan(&ref, &id))
		byKey[ref] = append(byKey[ref], id)
	}
	require.NoError(t, rows.Err())
	for key, ids := range byKey {
		assert.Len(t, ids, 1, "key %s has one payment", key)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d keys answered, %d payments", len(acked), len(byKey))
	for key, id := range acked {
		assert.Equal(t, []string{id}, byKey[key], "key %s: the acknowledged payment is the key's one payment", key)
	}
	// Every acknowledged key replays its answer from the restarted server.
	srv := current.Load()
	for key, id := range acked {
		status, got, err := postPayment(client, srv.url, key)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status, key)
		assert.Equal(t, id, got, "key %s replays its payment", key)
	}
}

// --one-commit without a Postgres store is refused before anything
// listens.
func TestServe_OneCommitNeedsPostgres(t *testing.T) {
	t.Parallel()
	root := newRootCommand(func(string) string { return "" })
	root.SetArgs([]string{"serve", "--one-commit", "--addr", "127.0.0.1:0"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--one-commit needs a postgres:// --store")
}
