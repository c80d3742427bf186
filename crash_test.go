package idem

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// The crash test re-executes the test binary as a child that runs a batch
// of payments against the parent's server, and kills it with SIGKILL in
// the middle of the batch.
const (
	envCrashChild = "IDEM_TEST_CRASH_CHILD"
	envCrashURL   = "IDEM_TEST_CRASH_URL"
	envCrashDB    = "IDEM_TEST_CRASH_DB"
	crashBatch    = 6
)

func crashIntentName(i int) string { return fmt.Sprintf("batch-1/payment-%d", i) }

// TestCrashChild is the child's batch; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envCrashChild) != "1" {
		t.Skip("runs only as the child of TestCrashResumePaysOnce")
	}
	store, err := keystore.OpenBolt(os.Getenv(envCrashDB), nil)
	require.NoError(t, err)
	c, err := New(WithStore(store))
	require.NoError(t, err)
	ctx := context.Background()
	url := os.Getenv(envCrashURL)

	intents := make([]*Intent, crashBatch)
	for i := range crashBatch {
		intents[i] = begin(t, c, crashIntentName(i), paymentRequest(t, url, 1000+i, crashIntentName(i)))
		fmt.Printf("begun %s %s\n", crashIntentName(i), intents[i].Key)
	}
	for i, in := range intents {
		fmt.Printf("sending %d\n", i)
		_, err := c.Do(ctx, in)
		require.NoError(t, err)
		fmt.Printf("done %d\n", i)
	}
	select {} // wait for the kill
}

func TestCrashResumePaysOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	t.Parallel()
	srv := idemtest.NewServer(t)
	srv.SetHandlerDelay(150 * time.Millisecond)
	dbPath := filepath.Join(t.TempDir(), "intents.db")

	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashURL+"="+srv.URL, envCrashDB+"="+dbPath)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	// Read the child's keys, and kill it while payment 2 is in flight.
	keys := map[string]string{}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		if len(f) == 3 && f[0] == "begun" {
			keys[f[1]] = f[2]
		}
		if len(f) == 2 && f[0] == "sending" && f[1] == "2" {
			break
		}
	}
	require.Len(t, keys, crashBatch, "the child began every intent")
	// Kill once payment 2 holds its key on the server (inside the 150 ms
	// handler delay), found by asking the server rather than by a sleep
	// that a slow machine stretches; the bound only stops a hang.
	require.Eventually(t, func() bool { return srv.Holding() == 1 || srv.PaymentCount() >= 2 }, 30*time.Second, time.Millisecond,
		"payment 2 reached the server")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	go io.Copy(io.Discard, stdout)
	paidByChild := srv.PaymentCount()
	assert.Less(t, paidByChild, crashBatch, "the child was killed mid-batch")

	// The file never holds the credentials.
	raw, err := os.ReadFile(dbPath)
	require.NoError(t, err)
	assert.False(t, bytes.Contains(raw, []byte(testToken)), "the keystore holds the bearer token")

	// Resume: list what is pending, supply credentials, Do each.
	srv.SetHandlerDelay(0)
	c, err := New(WithBoltStore(dbPath, nil), WithRequestEditor(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+testToken)
		return nil
	}), WithBackoffPolicy(func(int) time.Duration { return 20 * time.Millisecond }))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	pending, err := c.Pending(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(pending), crashBatch-2, "payments 2.. were not settled")
	for _, in := range pending {
		assert.Equal(t, keys[in.Name], in.Key, "resumed with the key born before the crash")
		resp, err := c.Do(ctx, in)
		require.NoError(t, err, in.Name)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
	}

	// A rerun of the batch finds every intent by name, with the same key.
	for i := range crashBatch {
		in := begin(t, c, crashIntentName(i), paymentRequest(t, srv.URL, 1000+i, crashIntentName(i)))
		assert.Equal(t, keys[crashIntentName(i)], in.Key)
		assert.Equal(t, Succeeded, in.State)
	}
	assert.Equal(t, crashBatch, srv.PaymentCount(), "exactly one payment per intent")
}
