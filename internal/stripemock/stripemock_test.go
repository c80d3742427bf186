package stripemock_test

import (
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

// TestMain stops the stripe-mock the tests shared, if one started, and
// removes its binary and socket directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	if sharedDir != "" {
		_ = os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// The stripe-mock every test uses, started by the first that asks. The
// tests run one after another: each counts, in its log, the requests it
// sent (see requests).
var (
	sharedOnce sync.Once
	shared     *stripeMock
	sharedDir  string
	sharedErr  error
)

// stripeMock is one stripe-mock process, listening on a loopback port.
type stripeMock struct {
	// URL is its HTTP base URL, http://127.0.0.1:port.
	URL    string
	cmd    *exec.Cmd
	log    *testenv.SyncBuffer
	copied chan struct{} // closed when its output has been read to the end
	syncs  atomic.Int64
}

// listening is the line stripe-mock prints once its HTTP listener is up
// (main.go's getPortListener).
var listening = regexp.MustCompile(`Listening for HTTP at address: (127\.0\.0\.1:\d+)`)

// startStripeMock returns the shared stripe-mock, building and starting
// it the first time.
func startStripeMock(t *testing.T) *stripeMock {
	t.Helper()
	goTool := testenv.GoCommand(t, "build stripe-mock")
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "stripemock-")
		if sharedErr == nil {
			shared, sharedErr = launchStripeMock(goTool, sharedDir)
		}
	})
	require.NoError(t, sharedErr)
	return shared
}

// launchStripeMock builds stripe-mock into dir at the version this
// module's go.mod pins with its tool directive (go.sum holds its hash),
// starts it, and waits, bounded, until it listens.
func launchStripeMock(goTool, dir string) (*stripeMock, error) {
	// The first build compiles stripe-mock and its embedded OpenAPI spec;
	// later runs take it from the build cache.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "stripe-mock")
	build := exec.CommandContext(ctx, goTool, "build", "-o", bin, "github.com/stripe/stripe-mock")
	build.Env = append(os.Environ(), "GOWORK=off", "GOTOOLCHAIN=local")
	build.WaitDelay = 10 * time.Second
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build github.com/stripe/stripe-mock: %v\n%s", err, out)
	}

	// -http-addr alone also opens HTTPS on the fixed port 12112
	// (main.go's getNonSecureHTTPSListener only stands down for -http,
	// -http-port, -http-unix and -port), which other runs would fight
	// over, and -http-port 0 listens on every interface. So HTTP goes to a
	// loopback port the system picks, HTTPS to a Unix socket nobody uses.
	cmd := exec.Command(bin, "-http-addr", "127.0.0.1:0", "-https-unix", filepath.Join(dir, "https.sock"))
	// A test binary killed before TestMain stops it takes it along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &stripeMock{cmd: cmd, log: &testenv.SyncBuffer{}, copied: make(chan struct{})}
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start stripe-mock: %w", err)
	}
	go func() {
		defer close(s.copied)
		_, _ = io.Copy(s.log, stdout)
	}()
	deadline := time.After(30 * time.Second)
	for {
		if m := listening.FindStringSubmatch(s.log.String()); m != nil {
			s.URL = "http://" + m[1]
			return s, nil
		}
		select {
		case <-s.copied:
			s.stop()
			return nil, fmt.Errorf("stripe-mock exited before listening:\n%s", s.log.String())
		case <-deadline:
			s.stop()
			return nil, fmt.Errorf("stripe-mock did not listen within 30s:\n%s", s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stop kills stripe-mock and waits for it.
func (s *stripeMock) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.copied
	_ = s.cmd.Wait()
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
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "stripe-mock knows no %s", path)
	require.Eventually(t, func() bool {
		return strings.Contains(s.log.String(), "Request: GET "+path+"\n")
	}, 10*time.Second, 2*time.Millisecond, "stripe-mock logged the marker request")
}
