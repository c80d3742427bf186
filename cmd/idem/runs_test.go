package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// runRunsCLI executes `idem runs args...` through a root command the way
// the binary does, and returns its exit status too.
func runRunsCLI(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code, _ = run(t.Context(), append([]string{"runs"}, args...), &out, &errOut, func(k string) string { return env[k] })
	return out.String(), errOut.String(), code
}

// sagaPayment is a POST /v1/payments of amount under reference, with the
// test's token.
func sagaPayment(baseURL string, amount int, reference string) (*http.Request, error) {
	body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": %q}`, amount, reference)
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	return req, nil
}

// sagaRefund is the compensation of a payment step: a payment referenced
// "refund-" and the step's reference.
func sagaRefund(baseURL string) saga.StepOption {
	return saga.Compensate(func(resp *http.Response) (*http.Request, error) {
		var p struct {
			Amount    int    `json:"amount"`
			Reference string `json:"reference"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			return nil, err
		}
		return sagaPayment(baseURL, p.Amount, "refund-"+p.Reference)
	})
}

// paymentsOf counts the payments the server made under reference.
func paymentsOf(srv *idemtest.Server, reference string) int {
	n := 0
	for _, p := range srv.Payments(testToken) {
		if p.Reference == reference {
			n++
		}
	}
	return n
}

// sagaClient is a client on the keystore at location (a bbolt path, or
// a Postgres keystore with opts) that makes one attempt per call.
func sagaClient(t *testing.T, store idem.Option) *idem.Client {
	t.Helper()
	c, err := idem.New(store, idem.WithMaxAttempts(1), idem.WithBudget(nil))
	require.NoError(t, err)
	return c
}

// sagaRuns writes real runs with package saga against srv into the
// client's keystore, and closes the client:
//
//   - order-1, completed: an HTTP step with a compensation, a local
//     step, an HTTP step;
//   - order-2, running: its charge's answer was lost, so its intent is
//     pending (the server made the payment);
//   - tenant-a@order-3, needs_operator: the shipment was refused, the
//     charge's refund was refused too.
func sagaRuns(t *testing.T, srv *idemtest.Server, c *idem.Client) {
	t.Helper()
	defer c.Close()
	ctx := t.Context()
	step := func(r *saga.Run, name string, amount int, ref string, opts ...saga.StepOption) error {
		req, err := sagaPayment(srv.URL, amount, ref)
		require.NoError(t, err)
		resp, err := r.Step(ctx, name, req, opts...)
		if resp != nil {
			resp.Body.Close()
		}
		return err
	}
	s, err := saga.New(c)
	require.NoError(t, err)

	r1, err := s.Run(ctx, "order-1")
	require.NoError(t, err)
	require.NoError(t, step(r1, "charge", 1000, "charge-order-1", sagaRefund(srv.URL)))
	_, err = r1.Local(ctx, "reserve", func(ctx context.Context) ([]byte, error) { return []byte("shelf-7"), nil })
	require.NoError(t, err)
	require.NoError(t, step(r1, "ship", 500, "ship-order-1"))
	require.NoError(t, r1.Complete(ctx))

	r2, err := s.Run(ctx, "order-2")
	require.NoError(t, err)
	srv.LoseNextResponses(1)
	require.ErrorIs(t, step(r2, "charge", 2000, "charge-order-2", sagaRefund(srv.URL)), saga.ErrStepUnknown)

	scoped, err := saga.New(c, saga.WithScope("tenant-a"))
	require.NoError(t, err)
	r3, err := scoped.Run(ctx, "order-3")
	require.NoError(t, err)
	require.NoError(t, step(r3, "charge", 3000, "charge-order-3", sagaRefund(srv.URL)))
	srv.FailNext(1, http.StatusUnprocessableEntity, 0)
	shipErr := step(r3, "ship", 300, "ship-order-3")
	require.ErrorIs(t, shipErr, idem.ErrFinalFailure)
	srv.FailNext(1, http.StatusUnprocessableEntity, 0) // the refund is refused
	require.ErrorIs(t, r3.Fail(ctx, shipErr), saga.ErrNeedsOperator)
	require.Equal(t, saga.NeedsOperator, r3.State())
}

// sagaKeystore is a bbolt keystore holding sagaRuns' runs, and the
// server they ran against.
func sagaKeystore(t *testing.T) (string, *idemtest.Server) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	srv := idemtest.NewServer(t)
	sagaRuns(t, srv, sagaClient(t, idem.WithBoltStore(path, &keystore.BoltOptions{NoSync: true})))
	return path, srv
}

func TestRunsList_EveryScopeWithStepsAndUnsettled(t *testing.T) {
	t.Parallel()
	path, _ := sagaKeystore(t)

	stdout, stderr, code := runRunsCLI(t, nil, "list", "--keystore", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `(?m)^RUN +STATE +STEPS +UNSETTLED +UPDATED +AGE$`, stdout)
	assert.Regexp(t, `(?m)^order-1 +completed +3 +0 +\d{4}-`, stdout)
	assert.Regexp(t, `(?m)^order-2 +running +1 +1 +`, stdout)
	assert.Regexp(t, `(?m)^tenant-a@order-3 +needs_operator +2 +0 +`, stdout)

	stdout, _, code = runRunsCLI(t, nil, "list", "--keystore", path, "--json")
	require.Equal(t, exitOK, code)
	var rows []runSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 3)
	assert.Equal(t, runSummary{ID: "order-3", Scope: "tenant-a", State: saga.NeedsOperator, StepCount: 2,
		CreatedAt: rows[2].CreatedAt, UpdatedAt: rows[2].UpdatedAt}, rows[2])
	assert.Equal(t, 1, rows[1].Unsettled)
	assert.False(t, rows[0].UpdatedAt.IsZero())

	stdout, _, code = runRunsCLI(t, nil, "list", "--keystore", path, "--scope", "tenant-a")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "tenant-a@order-3")
	assert.NotContains(t, stdout, "order-1")

	stdout, _, code = runRunsCLI(t, nil, "list", "--keystore", path, "--state", "running,needs_operator", "--json")
	require.Equal(t, exitOK, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 2)
	assert.Equal(t, "order-2", rows[0].ID)

	stdout, _, code = runRunsCLI(t, nil, "list", "--keystore", path, "--state", "compensated")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "no runs in "+path+" match\n", stdout)
}

func TestRunsShow_StepsIntentsAndWhatToDo(t *testing.T) {
	t.Parallel()
	path, _ := sagaKeystore(t)
	key := saga.DeriveStepKey(nil, "", "order-2", "charge", false)

	stdout, stderr, code := runRunsCLI(t, nil, "show", "order-2", "--keystore", path)
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `(?m)^State: +running$`, stdout)
	assert.Regexp(t, `(?m)^  charge +http +`+key+` +pending +`+saga.DeriveStepKey(nil, "", "order-2", "charge", true)+` +not begun +no$`, stdout)
	assert.Contains(t, stdout, "step charge: its outcome is unknown (intent pending): `idem runs resume order-2` resends it")

	stdout, _, code = runRunsCLI(t, nil, "show", "order-1", "--keystore", path)
	require.Equal(t, exitOK, code)
	assert.Regexp(t, `(?m)^  reserve +local +- +done +- +none +no$`, stdout)
	assert.Contains(t, stdout, "nothing: the run is completed")

	stdout, _, code = runRunsCLI(t, nil, "show", "order-3", "--scope", "tenant-a", "--keystore", path, "--json")
	require.Equal(t, exitOK, code)
	var d runDetail
	require.NoError(t, json.Unmarshal([]byte(stdout), &d))
	assert.Equal(t, saga.NeedsOperator, d.State)
	assert.Equal(t, "tenant-a", d.Scope)
	require.Len(t, d.Steps, 2)
	assert.Equal(t, idem.Succeeded, d.Steps[0].IntentState)
	require.NotNil(t, d.Steps[0].Compensation)
	assert.Equal(t, idem.Failed, d.Steps[0].Compensation.State)
	assert.Equal(t, idem.Failed, d.Steps[1].IntentState)
	assert.Contains(t, d.Problem, "needs an operator")
	require.NotEmpty(t, d.Todo)
	assert.Contains(t, d.Todo[0], "`idem runs resolve tenant-a@order-3 charge --succeeded --by NAME --note EVIDENCE`")

	same, _, code := runRunsCLI(t, nil, "show", "tenant-a@order-3", "--keystore", path, "--json")
	require.Equal(t, exitOK, code)
	assert.JSONEq(t, stdout, same, "SCOPE@RUN names the same run as --scope")
}

func TestRunsShow_BadInput(t *testing.T) {
	t.Parallel()
	path, _ := sagaKeystore(t)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"show", "order-9"}, exitFailed, `no run "order-9" in ` + path + ` without a scope`},
		{[]string{"show", "order-3"}, exitFailed, `a run stored under one needs --scope or SCOPE@RUN`},
		{[]string{"show", "order-3", "--scope", "tenant-b"}, exitFailed, `no run "order-3" in ` + path + ` in scope tenant-b`},
		{[]string{"show", "tenant-a@order-3", "--scope", "tenant-b"}, exitCannotRun, `names scope "tenant-a", and --scope says "tenant-b"`},
		{[]string{"show", "order 3"}, exitCannotRun, `byte ' ' is not allowed`},
		{[]string{"show", "x", "--scope", "a/b"}, exitCannotRun, `--scope "a/b"`},
		{[]string{"list", "--state", "done"}, exitCannotRun, `--state "done": unknown run state`},
		{[]string{"resume", "order-9"}, exitFailed, `no run "order-9"`},
		{[]string{"resume", "order-2", "--max-attempts", "0"}, exitCannotRun, `--max-attempts 0`},
		{[]string{"resolve", "order-9", "charge", "--succeeded", "--by", "ops"}, exitFailed, `no run "order-9"`},
		{[]string{"resolve", "order-2", "charge", "--succeeded"}, exitCannotRun, `--by is required`},
		{[]string{"resolve", "order-2", "charge", "--by", "ops"}, exitCannotRun, `exactly one of --succeeded and --failed`},
		{[]string{"resolve", "order-2", "refund", "--failed", "--by", "ops"}, exitFailed, `run order-2 has no step "refund" (its steps: charge)`},
		{[]string{"resolve", "order-1", "charge", "--succeeded", "--by", "ops"}, exitFailed, `run order-1 is completed: nothing is left to resolve`},
		{[]string{"lsit"}, exitCannotRun, `unknown command "lsit" for "idem runs"; did you mean list?`},
	} {
		stdout, stderr, code := runRunsCLI(t, nil, append(tc.args, "--keystore", path)...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.msg, tc.args)
		assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
		assert.Empty(t, stdout, tc.args)
	}
	_, stderr, code := runRunsCLI(t, nil, "list", "--keystore", filepath.Join(t.TempDir(), "missing.db"), "--json")
	assert.Equal(t, exitCannotRun, code)
	assert.Contains(t, stderr, "does not exist")
}

// list and show open the keystore read-only: its bytes stay as they were.
func TestRunsReadCommands_NeverWriteTheKeystore(t *testing.T) {
	t.Parallel()
	path, _ := sagaKeystore(t)
	testenv.Backdate(t, path)
	before := testenv.StateOf(t, path)
	for _, args := range [][]string{{"list"}, {"list", "--json"}, {"show", "order-2"}, {"show", "tenant-a@order-3", "--json"}} {
		_, stderr, code := runRunsCLI(t, nil, append(args, "--keystore", path)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
	}
	assert.Equal(t, before, testenv.StateOf(t, path))
}

// --json prints one JSON document on stdout for every runs command,
// a failure included.
func TestRunsJSON_OneDocumentEvenOnFailure(t *testing.T) {
	t.Parallel()
	path, srv := sagaKeystore(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"list", "--json"}, exitOK},
		{[]string{"list", "--json", "--state", "done"}, exitCannotRun},
		{[]string{"show", "order-9", "--json"}, exitFailed},
		{[]string{"resume", "order-9", "--json"}, exitFailed},
		{[]string{"resume", "tenant-a@order-3", "--json"}, exitFailed},
		{[]string{"resolve", "order-1", "charge", "--succeeded", "--by", "ops", "--json"}, exitFailed},
		{[]string{"resolve", "order-2", "charge", "--succeeded", "--json"}, exitCannotRun},
	} {
		stdout, stderr, code := runRunsCLI(t, nil, append(tc.args, "--keystore", path)...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		dec := json.NewDecoder(strings.NewReader(stdout))
		var doc any
		require.NoError(t, dec.Decode(&doc), "%v: stdout is JSON: %q", tc.args, stdout)
		assert.False(t, dec.More(), "one document only: %q", stdout)
		if code != exitOK {
			obj, ok := doc.(map[string]any)
			require.True(t, ok, "%v: %q", tc.args, stdout)
			assert.NotEmpty(t, obj["error"], tc.args)
		}
	}
	assert.Zero(t, paymentsOf(srv, "refund-charge-order-3"))
}

// A damaged run record is left out of list, named on stderr, with exit
// status 1; show of it says it is damaged.
func TestRunsList_DamagedRunIsLeftOutAndNamed(t *testing.T) {
	t.Parallel()
	path, _ := sagaKeystore(t)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("runs")).Put([]byte("order-1"), []byte("idem-run-v1\x00not a checksum"))
	}))
	require.NoError(t, db.Close())

	stdout, stderr, code := runRunsCLI(t, nil, "list", "--keystore", path)
	assert.Equal(t, exitFailed, code)
	assert.NotContains(t, stdout, "order-1 ")
	assert.Contains(t, stdout, "order-2 ")
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	require.Len(t, lines, 2, stderr)
	assert.True(t, strings.HasPrefix(lines[0], "damaged runs left out: "), stderr)
	assert.Equal(t, "Error: damaged runs in "+path+" were left out (above); the rest is sound", lines[1])

	_, stderr, code = runRunsCLI(t, nil, "show", "order-1", "--keystore", path)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, `run "order-1" in `+path+` is damaged and not shown`)
}
