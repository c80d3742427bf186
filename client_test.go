package idem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	bad := map[string]Option{
		"store":      WithStore(nil),
		"http":       WithHTTPClient(nil),
		"attempts":   WithMaxAttempts(0),
		"backoff":    WithBackoff(time.Second, time.Millisecond),
		"policy":     WithBackoffPolicy(nil),
		"ceiling":    WithRetryAfterCeiling(0),
		"retention":  WithRetention(-time.Hour),
		"secret":     WithSecretHeaders(""),
		"keygen":     WithKeyGenerator(nil),
		"polling":    WithPolling(0, time.Second),
		"bolt: path": WithBoltStore("", nil),
	}
	for name, opt := range bad {
		c, err := New(opt)
		assert.Error(t, err, name)
		assert.Nil(t, c, name)
	}
}

func TestNewClosesTheGivenStoreWhenAnOptionFails(t *testing.T) {
	t.Parallel()
	store := keystore.NewMemory()
	_, err := New(WithStore(store), WithMaxAttempts(-1))
	require.Error(t, err)
	_, err = store.Get(context.Background(), "k")
	assert.ErrorIs(t, err, keystore.ErrClosed)
}

func TestKeyGenerators(t *testing.T) {
	t.Parallel()
	for _, gen := range []func() (string, error){NewKeyV4, NewKeyV7} {
		a, err := gen()
		require.NoError(t, err)
		b, err := gen()
		require.NoError(t, err)
		assert.NotEqual(t, a, b)
		assert.NoError(t, dialect.Draft().CheckKey(a))
	}
	assert.Error(t, dialect.Draft().CheckKey(""))
	assert.Error(t, dialect.Draft().CheckKey(strings.Repeat("a", 256)))
	assert.Error(t, dialect.Draft().CheckKey("a b"))
	assert.NoError(t, dialect.Draft().CheckKey(strings.Repeat("~", 255)))
}

// A V4 key is a random UUID in its canonical text form: version 4, the
// RFC 9562 variant, lower-case hex, as uuid.Parse reads and writes it.
func TestKeyV4IsACanonicalRandomUUID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		k, err := NewKeyV4()
		require.NoError(t, err)
		u, err := uuid.Parse(k)
		require.NoError(t, err)
		require.Equal(t, uuid.Version(4), u.Version(), k)
		require.Equal(t, uuid.RFC4122, u.Variant(), k)
		require.Equal(t, u.String(), k)
		require.False(t, seen[k])
		seen[k] = true
	}
}

// The key buffer hands every byte out once: reads across refills never
// repeat, and what was handed out is cleared from the buffer.
func TestRandomBufferHandsOutEachByteOnce(t *testing.T) {
	t.Parallel()
	var r randomBuffer
	seen := map[[16]byte]bool{}
	for i := range 3 * len(r.buf) / 16 {
		var p [16]byte
		require.NoError(t, r.read(p[:]))
		require.False(t, seen[p], "read %d repeats an earlier one", i)
		seen[p] = true
		from := len(r.buf) - r.left - 16
		require.Equal(t, make([]byte, 16), r.buf[from:from+16], "read %d is cleared", i)
	}
}

func TestLogsNeverCarryKeysOrBodies(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newTestClient(t, WithLogger(logger))

	srv.FailNext(1, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 4242, "body-marker"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	out := logs.String()
	assert.Contains(t, out, keyHash(in.Key), "logs name the key by its hash")
	assert.NotContains(t, out, in.Key)
	assert.NotContains(t, out, "body-marker")
	assert.NotContains(t, out, testToken)
}

func TestSharedPoolSurvivesGiveUps(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	tr := &countingTransport{rt: http.DefaultTransport.(*http.Transport).Clone()}
	c := newTestClient(t, WithHTTPClient(&http.Client{Transport: tr}), WithMaxAttempts(1))
	srv.FailNext(1, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "pool"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrRetriesExhausted)
	assert.Zero(t, tr.closeIdle, "a give-up must not close the shared pool's connections")
}

type countingTransport struct {
	rt        http.RoundTripper
	closeIdle int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return c.rt.RoundTrip(r)
}
func (c *countingTransport) CloseIdleConnections() { c.closeIdle++ }

const envLockHolder = "IDEM_TEST_LOCK_HOLDER"

// TestLockHolderChild holds a keystore open until its stdin closes.
func TestLockHolderChild(t *testing.T) {
	path := os.Getenv(envLockHolder)
	if path == "" {
		t.Skip("runs only as the child of TestSecondProcessGetsErrLocked")
	}
	c, err := New(WithBoltStore(path, nil))
	require.NoError(t, err)
	defer c.Close()
	os.Stdout.WriteString("holding\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

func TestSecondProcessGetsErrLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderChild$")
	cmd.Env = append(os.Environ(), envLockHolder+"="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "holding\n", line)

	c, err := New(WithBoltStore(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond}))
	assert.Nil(t, c)
	assert.True(t, errors.Is(err, ErrLocked), "got %v", err)

	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait())
	c, err = New(WithBoltStore(path, nil))
	require.NoError(t, err, "free once the holder is gone")
	require.NoError(t, c.Close())
}
