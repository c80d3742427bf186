package frameworks

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testenv"
)

// buildTimeout bounds building the service: a cold cache compiles every
// framework.
const buildTimeout = 5 * time.Minute

var paysvc struct {
	once sync.Once
	path string
	out  []byte
	err  error
}

// paysvcBinary builds cmd/paysvc once per test run (with the race
// detector when the tests run under it) and returns its path.
func paysvcBinary(t *testing.T) string {
	t.Helper()
	goTool := testenv.GoCommand(t, "build the payments service")
	paysvc.once.Do(func() {
		dir, err := os.MkdirTemp("", "frameworks-paysvc-")
		if err != nil {
			paysvc.err = err
			return
		}
		paysvc.path = filepath.Join(dir, "paysvc")
		args := []string{"build", "-o", paysvc.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, append(args, "./cmd/paysvc")...)
		cmd.WaitDelay = 10 * time.Second
		paysvc.out, paysvc.err = cmd.CombinedOutput()
	})
	if paysvc.err != nil {
		t.Fatalf("go build ./cmd/paysvc: %v\n%s", paysvc.err, paysvc.out)
	}
	return paysvc.path
}

// service is one running paysvc process.
type service struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}

	mu     sync.Mutex
	output []string
}

// startService runs the service with args and waits until it listens.
func startService(t *testing.T, bin string, args ...string) *service {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: cmd, exited: make(chan struct{})}
	url := make(chan string, 1)
	go func() {
		s.tail(out, url)
		_ = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.kill(t) })
	select {
	case s.url = <-url:
	case <-s.exited:
		t.Fatalf("%s ended before listening:\n%s", bin, s.log())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s:\n%s", bin, s.log())
	}
	return s
}

// kill sends SIGKILL and waits, within a bound, for the process to end.
func (s *service) kill(t *testing.T) {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the service did not exit within 10s of SIGKILL")
	}
}

func (s *service) tail(r io.Reader, url chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.output = append(s.output, line)
		s.mu.Unlock()
		if u, ok := strings.CutPrefix(line, "listening on "); ok && !sent {
			url <- u
			sent = true
		}
	}
}

func (s *service) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.output, "\n")
}
