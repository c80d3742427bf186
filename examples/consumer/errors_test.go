package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// runCLI runs the command in this process and returns its exit status,
// stdout and stderr.
func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr syncBuffer
	code := cli(t.Context(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// requireOneLineError checks the command failed with one line on stderr
// that contains want and no password.
func requireOneLineError(t *testing.T, code int, stderr, want string) {
	t.Helper()
	require.Equal(t, 1, code, stderr)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	assert.Contains(t, stderr, want)
	assert.NotContains(t, stderr, "s3cret", "the password is redacted")
}

func TestUnreachableBrokerIsOneLine(t *testing.T) {
	t.Parallel()
	url := "amqp://guest:s3cret@" + testenv.ClosedAddr(t) + "/"
	code, _, stderr := runCLI(t, nil, "-amqp", url)
	requireOneLineError(t, code, stderr, "consumer: cannot connect to RabbitMQ at amqp://guest:xxxxx@")
	code, _, stderr = runCLI(t, map[string]string{"AMQP_URL": url}, "-publish", "1")
	requireOneLineError(t, code, stderr, "cannot connect to RabbitMQ")
}

func TestUnreachableDatabaseIsOneLine(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for _, dsn := range []string{
		"postgres://postgres:s3cret@" + testenv.ClosedAddr(t) + "/postgres?sslmode=disable",
		"host=127.0.0.1 port=" + testenv.ClosedPort(t) + " user=postgres password=s3cret sslmode=disable",
	} {
		code, _, stderr := runCLI(t, map[string]string{"DATABASE_URL": dsn}, "-amqp", r.amqpURL, "-queue", r.queue)
		requireOneLineError(t, code, stderr, "consumer: cannot connect to PostgreSQL at ")
		assert.Contains(t, stderr, "xxxxx")
	}
}

func TestBadFlagsAreRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-copies", "0"}, {"-prefetch", "0"}, {"-lease", "0s"}, {"-queue", ""}, {"stray"}, {"-no-such-flag"}} {
		code, _, stderr := runCLI(t, nil, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotEmpty(t, stderr, "%v", args)
	}
}

// TestStalledBrokerIsOneLine: a broker that accepts the connection and
// never answers is given up on after brokerTimeout: the proxy never
// answers, so only that bound can end the command, and its error says
// the handshake timed out. The test's own guard, far beyond the bound,
// only stops a hang and is never the assertion.
func TestStalledBrokerIsOneLine(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(testenv.AMQPURL(t))
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	proxy.Pause()
	u.Host = proxy.Addr()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := runCLI(t, nil, "-amqp", u.String(), "-publish", "1")
		done <- result{code, stderr}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(12 * brokerTimeout):
		t.Fatal("the command waited on a stalled broker without bound")
	}
	requireOneLineError(t, r.code, r.stderr, "consumer: cannot connect to RabbitMQ at ")
	assert.Contains(t, r.stderr, "timeout", "ended by the connect bound")
	proxy.Resume()
}
