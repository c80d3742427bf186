package outsidetest

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// listenTimeout bounds how long a started service may take to listen.
const listenTimeout = 30 * time.Second

// listeningPrefix starts the line the shop prints once it accepts
// connections, followed by its base URL.
const listeningPrefix = "listening on "

// service is one running shop process.
type service struct {
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how the process ended, once exited is closed

	mu     sync.Mutex
	output []string
}

// startService runs bin with args, waits until it prints its URL, and
// kills it when the test ends.
func startService(t *testing.T, bin string, args ...string) *service {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // one pipe: log lines interleave with the URL line
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: cmd, exited: make(chan struct{})}
	url := make(chan string, 1)
	tailed := make(chan struct{})
	go func() {
		defer close(tailed)
		s.tail(out, url)
	}()
	go func() {
		<-tailed
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not exit within 10s of SIGKILL", bin)
		}
	})
	select {
	case s.url = <-url:
	case <-s.exited:
		t.Fatalf("%s ended before listening: %v\n%s", bin, s.err, s.log())
	case <-time.After(listenTimeout):
		t.Fatalf("%s did not listen within %s:\n%s", bin, listenTimeout, s.log())
	}
	return s
}

// tail keeps the process's output and sends the URL of its first
// listening line.
func (s *service) tail(r io.Reader, url chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.output = append(s.output, line)
		s.mu.Unlock()
		if u, ok := strings.CutPrefix(line, listeningPrefix); ok && !sent {
			url <- u
			sent = true
		}
	}
}

// log is everything the process printed so far.
func (s *service) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.output, "\n")
}
