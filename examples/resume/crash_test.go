package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// --crash-after kills the built program with SIGKILL as the third
// payment's answer arrives; the rerun replays two payments from the
// keystore, gets the third replayed by the server under its key, and
// pays the rest: five payments for five intents.
func TestCrashAfterThenRerunPaysEachOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example")
	}
	t.Parallel()
	ts, err := testserver.New()
	require.NoError(t, err)
	defer ts.Close()
	hs := httptest.NewServer(ts.Handler())
	defer hs.Close()

	dir := t.TempDir()
	bin := filepath.Join(dir, "resume")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ks := filepath.Join(dir, "resume.db")
	cmd := exec.Command(bin, "--server", hs.URL, "--keystore", ks, "--count", "5", "--crash-after", "3")
	var first bytes.Buffer
	cmd.Stdout = &first
	err = cmd.Run()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the run died: %v\n%s", err, first.String())
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	assert.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL, "killed by SIGKILL: %v", exit)
	assert.Equal(t, 2, strings.Count(first.String(), " paid\n"), "two payments recorded before the crash:\n%s", first.String())

	var out bytes.Buffer
	o := options{server: hs.URL, keystore: ks, count: 5, token: "tok_resume_demo", batch: "batch-42"}
	require.NoError(t, run(context.Background(), &out, o))
	assert.Contains(t, out.String(), "payment-2       key")
	assert.Contains(t, out.String(), "(server replay: paid before, its answer lost)")
	assert.Contains(t, out.String(), "2 paid now, 3 paid by an earlier run, 0 not settled, of 5")
	n, err := ts.Store().CountPayments(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, n, "one payment per intent")
}

func TestNegativeFlagsAreRefused(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	assert.Error(t, run(context.Background(), &out, options{count: 1, server: "http://127.0.0.1:1", crashAfter: -1}))
	assert.Error(t, run(context.Background(), &out, options{count: 1, server: "http://127.0.0.1:1", delay: -1}))
}
