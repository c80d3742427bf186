package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listeningAddr matches the address in the "listening" log line.
var listeningAddr = regexp.MustCompile(`msg=listening addr=(\S+)`)

// logTail collects a server's log lines and reports its address.
type logTail struct {
	mu    sync.Mutex
	lines []string
	addr  chan string
	done  chan struct{}
}

func tailLog(r io.Reader) *logTail {
	l := &logTail{addr: make(chan string, 1), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			l.mu.Unlock()
			if m := listeningAddr.FindStringSubmatch(sc.Text()); m != nil {
				l.addr <- m[1]
			}
		}
	}()
	return l
}

func (l *logTail) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// waitAddr returns the base URL once the server logs it, or fails when
// the server ends first.
func (l *logTail) waitAddr(t *testing.T, ended <-chan error) string {
	t.Helper()
	select {
	case addr := <-l.addr:
		return "http://" + addr
	case err := <-ended:
		t.Fatalf("server ended before listening: %v\n%s", err, l.text())
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not log its address:\n%s", l.text())
	}
	return ""
}

// startServe runs `idem serve args...` in process until the test ends or
// stop is called; stop returns the command's error.
func startServe(t *testing.T, env map[string]string, args ...string) (url string, logs *logTail, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	logs = tailLog(pr)
	root := newRootCommand(serveTestEnv(env))
	root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
	root.SetOut(io.Discard)
	root.SetErr(pw)
	ended := make(chan error, 1)
	go func() {
		err := root.ExecuteContext(ctx)
		pw.Close()
		ended <- err
	}()
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			result = <-ended
			<-logs.done
		})
		return result
	}
	t.Cleanup(func() { _ = stop() })
	return logs.waitAddr(t, ended), logs, stop
}

type response struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, client *http.Client, method, url, key string, header http.Header) (response, error) {
	t.Helper()
	var body string
	if method == http.MethodPost {
		body = `{"amount":1000,"currency":"EUR"}`
	}
	h := http.Header{}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	for k, v := range header {
		h[k] = v
	}
	return sendBody(t, client, method, url, body, h)
}

// sendBody sends body (none when empty) as JSON, with header on top.
func sendBody(t *testing.T, client *http.Client, method, url, body string, header http.Header) (response, error) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, r)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}, nil
}

func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestServe_ServesPaymentsAndStopsCleanly(t *testing.T) {
	t.Parallel()
	url, logs, stop := startServe(t, map[string]string{adminTokenEnv: "from-env"}, "--payout-delay", "0")
	client := noKeepAlive()

	first, err := send(t, client, http.MethodPost, url+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, first.status, first.body)
	replay, err := send(t, client, http.MethodPost, url+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	assert.Equal(t, first.body, replay.body)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))

	missing, err := send(t, client, http.MethodPost, url+"/v1/payments", "", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, missing.status)

	admin, err := send(t, client, http.MethodGet, url+"/admin/faults", "", http.Header{"Authorization": {"Bearer from-env"}})
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, admin.status, "an inherited "+adminTokenEnv+" alone turns nothing on")
	assert.Contains(t, logs.text(), "admin token ignored")
	assert.Contains(t, logs.text(), `admin=""`)

	require.NoError(t, stop())
	assert.Contains(t, logs.text(), "msg=stopped")
	assert.NotContains(t, logs.text(), "k1", "keys are never logged")
}

// --memory-max-records bounds the memory store: a new key past it is
// answered 503 with Retry-After, a held one still replays.
func TestServe_MemoryBound(t *testing.T) {
	t.Parallel()
	url, _, _ := startServe(t, nil, "--memory-max-records", "1")
	client := noKeepAlive()
	first, err := send(t, client, http.MethodPost, url+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	full, err := send(t, client, http.MethodPost, url+"/v1/payments", "k2", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, full.status, full.body)
	assert.NotEmpty(t, full.header.Get("Retry-After"))
	replay, err := send(t, client, http.MethodPost, url+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	assert.Equal(t, first.body, replay.body)
}

func TestServe_FaultFlags(t *testing.T) {
	t.Parallel()
	url, _, _ := startServe(t, nil,
		"--fail-next", "1", "--fail-status", "502", "--fail-retry-after", "2s",
		"--lose-next", "1", "--admin-token", "flag-token", "--admin-addr", "public", "--log-level", "debug")
	client := noKeepAlive()

	failed, err := send(t, client, http.MethodPost, url+"/v1/payments", "k", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadGateway, failed.status)
	assert.Equal(t, "2", failed.header.Get("Retry-After"))

	_, err = send(t, client, http.MethodPost, url+"/v1/payments", "k", nil)
	require.Error(t, err, "the second response is lost")

	replay, err := send(t, client, http.MethodPost, url+"/v1/payments", "k", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))

	admin, err := send(t, client, http.MethodGet, url+"/admin/faults", "", http.Header{"Authorization": {"Bearer flag-token"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"fail_next":{"count":0,"status":502,"retry_after":"2s"},"lose_next":0,"reset_next":0,"handler_delay":"0s","crash_after_commit":0}`, admin.body)
}

// The admin endpoint of idem serve arms the crash with the process-killing
// hook. The test only arms and disarms it: a guarded request would kill
// the test binary.
func TestServe_AdminArmsCrashAfterCommit(t *testing.T) {
	t.Parallel()
	_, logs, _ := startServe(t, nil, "--admin", "--admin-addr", "127.0.0.1:0", "--admin-token", "flag-token")
	url := adminURL(t, logs)
	client := noKeepAlive()
	auth := http.Header{"Authorization": {"Bearer flag-token"}}

	armed, err := sendBody(t, client, http.MethodPost, url+"/admin/faults", `{"crash_after_commit":1}`, auth)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, armed.status, armed.body)
	assert.Contains(t, armed.body, `"crash_after_commit":1`)

	cleared, err := send(t, client, http.MethodDelete, url+"/admin/faults", "", auth)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, cleared.status, cleared.body)
	assert.Contains(t, cleared.body, `"crash_after_commit":0`)
}

func TestServe_RejectsBadFlags(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		args []string
		want string
	}{
		"unknown store":     {[]string{"--store", "postgres"}, `unsupported --store "postgres": want memory, postgres://`},
		"fail status":       {[]string{"--fail-status", "200"}, "--fail-status must be 400-599"},
		"negative count":    {[]string{"--lose-next", "-1"}, "--lose-next must not be negative"},
		"negative delay":    {[]string{"--handler-delay", "-1s"}, "--handler-delay must not be negative"},
		"log level":         {[]string{"--log-level", "loud"}, `invalid --log-level "loud"`},
		"zero lease":        {[]string{"--lease", "0s"}, "lease must be positive"},
		"lease too short":   {[]string{"--lease", "1s"}, "lease 1s is shorter than 3 × store timeout 3s"},
		"lease vs timeout":  {[]string{"--lease", "1s", "--store-timeout", "500ms"}, "at least 1.5s or lower the store timeout to at most 333ms"},
		"zero timeout":      {[]string{"--store-timeout", "0s"}, "--store-timeout must be positive"},
		"negative payout":   {[]string{"--payout-delay", "-1s"}, "payout delay must not be negative"},
		"bad duration":      {[]string{"--retention", "forever"}, "invalid argument"},
		"bad address":       {[]string{"--addr", "no-port"}, "listen on no-port"},
		"positional":        {[]string{"extra"}, "unknown command"},
		"admin token space": {[]string{"--admin", "--admin-token", "a b"}, "admin token"},
		"admin no token":    {[]string{"--admin"}, "--admin needs a token"},
		"admin addr":        {[]string{"--addr", "127.0.0.1:0", "--admin-token", "t", "--admin-addr", "no-port"}, "listen on --admin-addr no-port"},
		"memory bound":      {[]string{"--memory-max-records", "0"}, "--memory-max-records and --memory-max-bytes must be positive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			root := newRootCommand(func(string) string { return "" })
			root.SetArgs(append([]string{"serve"}, tc.args...))
			root.SetOut(io.Discard)
			root.SetErr(&stderr)
			err := root.ExecuteContext(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, exitCannotRun, exitCodeOf(err))
		})
	}
}

func TestServe_Help(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}} {
		var stdout bytes.Buffer
		root := newRootCommand(func(string) string { return "" })
		root.SetArgs(args)
		root.SetOut(&stdout)
		require.NoError(t, root.Execute())
		assert.Contains(t, stdout.String(), "serve")
	}
	var stdout bytes.Buffer
	root := newRootCommand(func(string) string { return "" })
	root.SetArgs([]string{"serve", "--help"})
	root.SetOut(&stdout)
	require.NoError(t, root.Execute())
	for _, flag := range []string{"--addr", "--retention", "--lease", "--store", "--payout-delay", "--store-5xx",
		"--admin-token", "--admin-addr", "--admin", adminTokenEnv, "--fail-next", "--fail-status", "--fail-retry-after", "--lose-next",
		"--reset-next", "--handler-delay", "--log-level", "127.0.0.1:8080",
		"--read-header-timeout", "--read-timeout", "--write-timeout", "--idle-timeout", defaultAdminAddr} {
		assert.Contains(t, stdout.String(), flag)
	}
}

// TestServe_BinaryExitsZeroOnSIGTERM builds the real binary, serves a
// request, and checks SIGTERM drains and exits 0.
func TestServe_BinaryExitsZeroOnSIGTERM(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go tool builds the binary under test")
	bin := filepath.Join(t.TempDir(), "idem")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
			cmd.Env = append(os.Environ(), adminTokenEnv+"=")
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			logs := tailLog(stderr)
			exited := make(chan error, 1)
			url := logs.waitAddr(t, exited)

			resp, err := send(t, noKeepAlive(), http.MethodPost, url+"/v1/payments", "k", nil)
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, resp.status)

			require.NoError(t, cmd.Process.Signal(sig))
			<-logs.done
			err = cmd.Wait()
			assert.NoError(t, err, "exit status; log:\n%s", logs.text())
			assert.Equal(t, 0, cmd.ProcessState.ExitCode())
			assert.Contains(t, logs.text(), "msg=\"shutting down\"")
			assert.Contains(t, logs.text(), "msg=stopped")
		})
	}
}
