package main

import (
	"bytes"
	"errors"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// states maps each key of the keystore at path to its state.
func states(t *testing.T, path string) map[string]keystore.State {
	t.Helper()
	out := map[string]keystore.State{}
	for _, r := range readKeystore(t, path) {
		out[r.Key] = r.State
	}
	return out
}

func TestResume_SettlesPendingIntentsWithTheirKeysAndCredentials(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--token", testToken, "--no-progress")
	require.NoError(t, err, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, "resumed 2 intents: 2 succeeded, 0 failed, 0 still pending, 0 expired")
	for _, in := range p.pending {
		assert.Regexp(t, `(?m)^succeeded  `+in.Key+`  `+in.Name+`  201 Created$`, stdout)
	}
	assert.Equal(t, 4, p.srv.PaymentCount())
	assert.Len(t, p.srv.Payments(testToken), 4, "the token reached the server on every resumed intent")

	got := states(t, p.path)
	for _, in := range append(p.pending, p.succeeded...) {
		assert.Equal(t, keystore.Succeeded, got[in.Key], in.Name)
	}
	assert.Equal(t, keystore.Failed, got[p.failed[0].Key], "a failed intent is not pending, so not resent")

	stdout, _, err = runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--token", testToken)
	require.NoError(t, err)
	assert.Equal(t, "nothing to resume: no pending intents in "+p.path+" match\n", stdout)
	assert.Equal(t, 4, p.srv.PaymentCount())
}

func TestResume_HeaderFlagAndTokenFromEnvironment(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	// Another principal's credentials are refused before any byte leaves:
	// the server would take the key for a new payment in that scope.
	_, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress",
		"--key", p.pending[0].Name, "--header", "Authorization: Bearer tok_from_header")
	require.Error(t, err)
	assert.Contains(t, stderr, "another principal")
	assert.Empty(t, p.srv.Payments("tok_from_header"))

	before := len(p.srv.Payments(testToken))
	_, stderr, err = runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress",
		"--key", p.pending[0].Name, "--header", "Authorization: Bearer "+testToken)
	require.NoError(t, err, stderr)
	assert.Len(t, p.srv.Payments(testToken), before+1)

	_, stderr, err = runIntentsCLI(t, map[string]string{tokenEnv: testToken}, "resume", "--keystore", p.path, "--no-progress")
	require.NoError(t, err, stderr)
	assert.Len(t, p.srv.Payments(testToken), before+2)
	assert.Equal(t, 4, p.srv.PaymentCount())
}

func TestResume_KeySelectsIntentsInAnyState(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	stdout, _, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress", "--token", testToken,
		"--key", p.pending[1].Key, "--key", p.succeeded[0].Name)
	require.NoError(t, err)
	assert.Contains(t, stdout, "resumed 2 intents: 2 succeeded")
	assert.Equal(t, 3, p.srv.PaymentCount(), "the succeeded intent was replayed locally, not resent")
	got := states(t, p.path)
	assert.Equal(t, keystore.Succeeded, got[p.pending[1].Key])
	assert.Equal(t, keystore.Pending, got[p.pending[0].Key], "not selected")

	// A failed intent stays failed: its stored answer is final.
	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress", "--key", p.failed[0].Key)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "1 of 1 intents not settled (1 failed, 0 still pending, 0 expired)")
	assert.Regexp(t, `(?m)^failed     `+p.failed[0].Key, stdout)
	assert.Equal(t, 3, p.srv.PaymentCount())
}

func TestResume_OlderThanAndExpiry(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	ageRecords(t, p.path, 2*time.Hour, p.pending[0].Key)

	stdout, _, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress", "--token", testToken, "--older-than", "1h")
	require.NoError(t, err)
	assert.Contains(t, stdout, "resumed 1 intent: 1 succeeded")
	assert.Equal(t, keystore.Pending, states(t, p.path)[p.pending[1].Key], "too young for --older-than 1h")

	ageRecords(t, p.path, 48*time.Hour, p.pending[1].Key)
	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress", "--token", testToken)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stdout, "resumed 1 intent: 0 succeeded, 0 failed, 0 still pending, 1 expired")
	assert.Contains(t, stderr, "older than the server's key retention")
	assert.Equal(t, keystore.Expired, states(t, p.path)[p.pending[1].Key])
	assert.Equal(t, 3, p.srv.PaymentCount(), "an expired intent is never resent")
}

func TestResume_UnreachableServerIsOneLineAndKeepsIntentsPending(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	p.srv.Close()

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", p.path, "--no-progress", "--max-attempts", "1", "--token", testToken)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "2 of 2 intents not settled (0 failed, 2 still pending, 0 expired); last error: ")
	assert.Contains(t, stderr, "connection refused")
	assert.Contains(t, stdout, "resumed 2 intents: 0 succeeded, 0 failed, 2 still pending, 0 expired")
	got := states(t, p.path)
	for _, in := range p.pending {
		assert.Equal(t, keystore.Pending, got[in.Key], "still resumable with the same key")
	}
}

func TestResume_BadArgumentsAreOneLineAndSendNothing(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	requests := p.srv.Requests()
	for _, args := range [][]string{
		{"--max-attempts", "0"},
		{"--timeout", "0s"},
		{"--retention", "-1h"},
		{"--concurrency", "0"},
		{"--concurrency", "1000"},
		{"--older-than", "-1m"},
		{"--older-than", "1h", "--key", p.pending[0].Key},
		{"--header", "no colon"},
		{"--header", "Bad Name: x"},
		{"--header", "Idempotency-Key: mine"},
		{"--token", "t", "--header", "Authorization: Bearer u"},
		{"--key", ""},
		{"--key", "no-such-intent"},
		{"--max-attempts", "three"},
		{"positional"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, append([]string{"resume", "--keystore", p.path, "--no-progress"}, args...)...)
		requireOneLineError(t, stderr, err)
	}
	assert.Equal(t, requests, p.srv.Requests(), "nothing was sent")
}

func TestResume_ProgressBarListsOnlyUnsettledIntents(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	rep := newReporter(&stdout, &stderr, 3, true)
	rep.done(outcome{key: "k1", state: keystore.Succeeded, status: 201})
	rep.done(outcome{key: "k2", name: "n2", state: keystore.Pending, err: errors.New("idem: gave up")})
	rep.done(outcome{key: "k3", state: keystore.Succeeded, status: 201})
	rep.finish()
	assert.Contains(t, stderr.String(), "resuming", "the bar was drawn")
	assert.Contains(t, stderr.String(), "/3)")
	assert.Equal(t, "resuming 100% |██████████████████████████████| (3/3)", lastFrame(stderr.String()), "and left at 100%%: %q", stderr.String())
	assert.Equal(t, "pending    k2  n2  idem: gave up\n", stdout.String())

	stdout.Reset()
	stderr.Reset()
	rep = newReporter(&stdout, &stderr, 1, false)
	rep.done(outcome{key: "k1", state: keystore.Succeeded, status: 201})
	rep.finish()
	assert.Equal(t, "succeeded  k1  201 Created\n", stdout.String())
	assert.Empty(t, stderr.String())
	assert.False(t, isTerminal(&stderr))
}

// raceBuild reports whether this test binary was built with -race.
func raceBuild() bool {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range info.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// TestResume_FinishesWhatAKilledBatchLeft runs examples/resume as its own
// process, SIGKILLs it while the server holds one of its payments, and
// resumes the keystore it left: every intent ends Succeeded with the key
// it had before the kill, and every intent paid exactly once.
func TestResume_FinishesWhatAKilledBatchLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "resume")
	args := []string{"build", "-o", bin}
	if raceBuild() {
		args = append(args, "-race") // reuses what this test's build compiled
	}
	build := exec.CommandContext(t.Context(), testenv.GoCommand(t, "build examples/resume"), append(args, "github.com/idemkit/idem/examples/resume")...)
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	srv := idemtest.NewServer(t)
	srv.SetHandlerDelay(150 * time.Millisecond)
	ks := filepath.Join(dir, "resume.db")
	const token = "tok_batch"
	batch := exec.Command(bin, "--server", srv.URL, "--keystore", ks, "--count", "20", "--token", token)
	var batchOut bytes.Buffer
	batch.Stdout, batch.Stderr = &batchOut, &batchOut
	require.NoError(t, batch.Start())
	t.Cleanup(func() { _ = batch.Process.Kill() })

	// Kill while the fourth payment is held by the server: its intent is
	// in the keystore, its answer is not.
	heldMidBatch := func() bool {
		sent := srv.Requests()
		return sent >= 4 && srv.PaymentCount() < sent
	}
	require.Eventually(t, heldMidBatch, 15*time.Second, 2*time.Millisecond, "batch output: %s", &batchOut)
	require.NoError(t, batch.Process.Kill())
	err = batch.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "the batch was killed, not finished: %s", &batchOut)

	before := map[string]string{} // name -> key
	pending := 0
	for _, r := range readKeystore(t, ks) {
		before[r.Name] = r.Key
		if r.State == keystore.Pending {
			pending++
		}
	}
	require.Len(t, before, 20, "the batch persists every intent before it sends")
	require.GreaterOrEqual(t, pending, 1, "the kill left work to resume")
	require.Less(t, srv.PaymentCount(), 20, "the kill came mid-batch")

	stdout, stderr, err := runIntentsCLI(t, nil, "resume", "--keystore", ks, "--token", token, "--no-progress")
	require.NoError(t, err, "stdout: %s\nstderr: %s", stdout, stderr)

	after := readKeystore(t, ks)
	require.Len(t, after, len(before))
	for _, r := range after {
		assert.Equal(t, before[r.Name], r.Key, "%s keeps its key", r.Name)
		assert.Equal(t, keystore.Succeeded, r.State, r.Name)
	}
	assert.Equal(t, len(before), srv.PaymentCount(), "each intent paid exactly once")
	assert.Len(t, srv.Payments(token), len(before))
	assert.Len(t, regexp.MustCompile(`(?m)^succeeded  `).FindAllString(stdout, -1), pending, stdout)
}

func TestResumeFlags_Credentials(t *testing.T) {
	t.Parallel()
	h, err := resumeFlags{token: "abc", headers: []string{"X-Tenant: acme", "x-tenant: beta"}}.credentials()
	require.NoError(t, err)
	assert.Equal(t, http.Header{"Authorization": {"Bearer abc"}, "X-Tenant": {"acme", "beta"}}, h)
}
