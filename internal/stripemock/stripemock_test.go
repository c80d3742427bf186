package stripemock_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// binDir holds the stripe-mock binary built once for this test binary's
// run (see stripeMockBinary); TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stripemock-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stripemock tests: temp dir:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// stripeMockBinary builds stripe-mock at the version this module's go.mod
// pins with its tool directive (go.sum holds its hash), once per run.
func stripeMockBinary(t *testing.T) string {
	t.Helper()
	goTool := testenv.GoCommand(t, "build stripe-mock")
	buildOnce.Do(func() {
		// The first build compiles stripe-mock and its embedded OpenAPI
		// spec; later runs take it from the build cache.
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		path := filepath.Join(binDir, "stripe-mock")
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", path, "github.com/stripe/stripe-mock")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
		cmd.WaitDelay = 10 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build github.com/stripe/stripe-mock: %v\n%s", err, out)
			return
		}
		buildPath = path
	})
	require.NoError(t, buildErr)
	return buildPath
}

// stripeMock is one stripe-mock process, listening on a loopback port
// of its own, stopped when the test ends.
type stripeMock struct {
	// URL is its HTTP base URL, http://127.0.0.1:port.
	URL   string
	log   *testenv.SyncBuffer
	syncs atomic.Int64
}

// listening is the line stripe-mock prints once its HTTP listener is up
// (main.go's getPortListener).
var listening = regexp.MustCompile(`Listening for HTTP at address: (127\.0\.0\.1:\d+)`)

// startStripeMock starts stripe-mock for the test and waits, bounded,
// until it listens.
func startStripeMock(t *testing.T) *stripeMock {
	t.Helper()
	bin := stripeMockBinary(t)
	// -http-addr alone also opens HTTPS on the fixed port 12112
	// (main.go's getNonSecureHTTPSListener only stands down for -http,
	// -http-port, -http-unix and -port), which parallel runs would fight
	// over; -http-port 0 listens on every interface. So HTTP goes to a
	// loopback port the system picks, HTTPS to a Unix socket nobody uses.
	sockDir, err := os.MkdirTemp("", "stripemock-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-unix", filepath.Join(sockDir, "https.sock"))
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	log := &testenv.SyncBuffer{}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	waited := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-waited
	})

	addr := make(chan string, 1)
	go func() {
		defer close(waited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(log, line+"\n")
			if m := listening.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case a := <-addr:
		return &stripeMock{URL: "http://" + a, log: log}
	case <-waited:
		t.Fatalf("stripe-mock exited before listening:\n%s", log.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("stripe-mock did not listen within 30s:\n%s", log.String())
	}
	return nil
}

// requests counts the requests for method and path stripe-mock has
// begun handling, once its log has caught up with every request answered
// so far (see sync). Its stateless handler makes a new object for every
// create it answers 200, so for a create that succeeds this is how many
// objects it made.
func (s *stripeMock) requests(t *testing.T, method, path string) int {
	t.Helper()
	s.sync(t)
	want := "Request: " + method + " " + path
	n := 0
	for line := range strings.Lines(s.log.String()) {
		if strings.TrimSpace(line) == want {
			n++
		}
	}
	return n
}

// sync sends stripe-mock a request of its own and waits, bounded, until
// its log shows it. HandleRequest prints "Request: METHOD PATH" before
// anything else, and one process writes its standard output in order, so
// once the marker's line is read every request answered before it is in
// the log too.
func (s *stripeMock) sync(t *testing.T) {
	t.Helper()
	path := fmt.Sprintf("/v1/idem_log_sync/%d", s.syncs.Add(1))
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apiKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "stripe-mock knows no %s", path)
	require.Eventually(t, func() bool {
		return strings.Contains(s.log.String(), "Request: GET "+path+"\n")
	}, 10*time.Second, 2*time.Millisecond, "stripe-mock logged the marker request")
}
