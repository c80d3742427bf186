package checkpeers_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"io"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/idemkit/idem/idemtest"
)

// listening matches the address in `idem serve`'s "listening" log line.
var listening = regexp.MustCompile(`msg=listening addr=(\S+)`)

// serveReference starts `idem serve` on a free port with its admin API
// on the same address, so that `idem check --admin-token` can hold its
// requests, and returns its base URL and admin token.
func serveReference(t *testing.T) (url, token string) {
	t.Helper()
	token = rand.Text()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, idemBinary, "serve", "--addr", "127.0.0.1:0", "--admin-addr", "public", "--admin-token", token)
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			if m := listening.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
				break
			}
		}
		_, _ = io.Copy(io.Discard, stderr) // keep the pipe drained
	}()
	select {
	case addr := <-found:
		return "http://" + addr, token
	case <-time.After(30 * time.Second):
		t.Fatal("idem serve did not say where it listens within 30s")
	}
	return "", ""
}

// TestReferenceServer grades `idem serve` twice at the idem profile, held
// through its admin API so that a duplicate meets its original running:
// the same verdicts each time, every check passed.
func TestReferenceServer(t *testing.T) {
	url, token := serveReference(t)
	run := twice(t, url, "--profile", idemtest.ProfileIdem, "--admin-token", token)
	if run.exit != 0 {
		t.Errorf("exit %d, want 0", run.exit)
	}
	for _, r := range run.report.Checks {
		if !r.Passed {
			t.Errorf("%s: %s", verdict(r), r.Detail)
		}
	}
}
