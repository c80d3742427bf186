package main

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// storeSecret is the password every DSN of these tests carries.
const storeSecret = "s3cretPW"

// runServeCapture runs `idem serve args...` at debug level to its end
// (or a short life) and returns every line it logged and its error.
func runServeCapture(t *testing.T, life time.Duration, args ...string) (string, error) {
	t.Helper()
	var stderr lockedBuffer
	root := newRootCommand(serveTestEnv(nil))
	root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0", "--log-level", "debug"}, args...))
	root.SetOut(io.Discard)
	root.SetErr(&stderr)
	ctx, cancel := context.WithTimeout(t.Context(), life)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return stderr.String(), err
}

// A DSN's password never reaches the start-up error or any log line,
// whether the store is unreachable or the URL cannot be parsed.
func TestServe_StorePasswordNeverShownOnFailure(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedAddr(t)
	for name, store := range map[string]string{
		"postgres":          "postgres://app:" + storeSecret + "@" + addr + "/db?sslmode=disable",
		"postgresql":        "postgresql://app:" + storeSecret + "@" + addr + "/db",
		"redis":             "redis://:" + storeSecret + "@" + addr + "/0",
		"rediss user":       "rediss://u:" + storeSecret + "@" + addr + "/0",
		"postgres bad port": "postgres://app:" + storeSecret + "@db:notaport/db",
		"redis bad db":      "redis://:" + storeSecret + "@" + addr + "/notanumber",
		"unknown scheme":    "mysql://app:" + storeSecret + "@" + addr + "/db",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			logs, err := runServeCapture(t, time.Minute, "--store", store)
			require.Error(t, err)
			assert.NotContains(t, err.Error(), storeSecret)
			assert.NotContains(t, logs, storeSecret)
		})
	}
}

// With a reachable store the "listening" line names it redacted, and no
// line of a served run shows the password. The test databases do not
// check passwords, so one in the URL is harmless.
func TestServe_StorePasswordNeverShownWhenServing(t *testing.T) {
	t.Parallel()
	for name, dsn := range map[string]func(testing.TB) string{
		"postgres": testenv.PostgresDSN,
		"redis":    testenv.RedisURL,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(dsn(t))
			require.NoError(t, err)
			user := u.User.Username()
			if name == "redis" {
				user = "" // a Redis without users takes no user name
			}
			u.User = url.UserPassword(user, storeSecret)
			args := []string{"--store", u.String()}
			if name == "redis" {
				args = append(args, "--redis-allow-volatile") // the test Redis persists nothing
			}
			logs, err := runServeCapture(t, 3*time.Second, args...)
			assert.NotContains(t, logs, storeSecret)
			if err != nil {
				assert.NotContains(t, err.Error(), storeSecret)
				t.Logf("store refused the password (its error is checked): %v", err)
				return
			}
			assert.Contains(t, logs, "msg=listening")
			assert.Contains(t, logs, "xxxxx@", "the listening line names the store redacted")
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent use. go-redis logs
// through one process-wide logger, from dial goroutines that may outlive
// the command that set it, while cobra writes the command's error to the
// same writer.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
