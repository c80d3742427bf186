package saga_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/saga"
)

// A step the provider accepted (202) whose operation is still running is
// not passed: Step and Complete report it until a later call polls it to
// its outcome.
func TestAcceptedStepWaitsForItsOperation(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	srv := idemtest.NewServer(t, idemtest.WithClock(clock), idemtest.WithPayoutDelay(time.Hour))
	s, _, _ := newSaga(t, idem.WithPolling(5*time.Millisecond, 30*time.Millisecond), idem.WithRetryAfterCeiling(5*time.Millisecond))
	r, err := s.Run(bg, "payout-1")
	require.NoError(t, err)
	payout := func() *http.Request {
		req := payment(t, srv.URL, 700, "payout-1")
		req.URL.Path = "/v1/payouts"
		return req
	}
	resp, err := r.Step(bg, "payout", payout())
	var unknown *saga.StepUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.Contains(t, unknown.Error(), "accepted")
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.ErrorIs(t, r.Complete(bg), saga.ErrStepUnknown)

	mu.Lock()
	now = now.Add(2 * time.Hour) // the payout settles
	mu.Unlock()
	resp, err = r.Step(bg, "payout", payout())
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, r.Complete(bg))
}

// Two processes driving one run: the second writer's change is refused,
// never merged.
func TestConcurrentWriterIsRefused(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t)
	a, err := s.Run(bg, "order-9")
	require.NoError(t, err)
	b, err := s.Resume(bg, "order-9")
	require.NoError(t, err)
	_, err = a.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-9"))
	require.NoError(t, err)
	_, err = b.Step(bg, "ship", payment(t, srv.URL, 500, "ship-order-9"))
	require.ErrorIs(t, err, saga.ErrRunChanged)
	assert.Zero(t, effects(srv, "ship-order-9"), "the refused writer sent nothing")
	require.ErrorIs(t, b.Complete(bg), saga.ErrRunChanged)
	require.NoError(t, a.Complete(bg))
}

// The process dies with a compensation begun and not settled: a process
// that did not call the step again still sends it, from the stored
// request, with the credentials its client gives back; a step whose
// compensation this process does not know and which was never begun is
// ErrCompensationMissing.
func TestCompensationAfterRestart(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, c, path := newSaga(t, idem.WithMaxAttempts(1))
	r, err := s.Run(bg, "order-10")
	require.NoError(t, err)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-10"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	_, err = r.Step(bg, "hold", payment(t, srv.URL, 300, "hold-order-10"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	srv.ResetNext(1) // the refund of the hold is begun, and its attempt reset
	err = r.Fail(bg, errors.New("cancelled"))
	require.ErrorIs(t, err, saga.ErrStepUnknown)
	require.NoError(t, c.Close())

	token := func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+testToken)
		return nil
	}
	c2 := boltClient(t, path, idem.WithRequestEditor(token))
	s2, err := saga.New(c2)
	require.NoError(t, err)
	r2, err := s2.Resume(bg, "order-10")
	require.NoError(t, err)
	assert.Equal(t, saga.Compensating, r2.State())
	err = r2.Fail(bg, nil)
	require.ErrorIs(t, err, saga.ErrCompensationMissing, "the charge's refund was never begun, and no step call gave it")
	assert.Equal(t, 1, effects(srv, "refund-hold-order-10"), "the begun refund went out from its stored request")
	assert.Zero(t, effects(srv, "refund-charge-order-10"))

	_, err = r2.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-10"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err, "the step replays, and gives its compensation")
	require.NoError(t, r2.Fail(bg, nil))
	assert.Equal(t, saga.Compensated, r2.State())
	assert.Equal(t, 1, effects(srv, "refund-charge-order-10"))
	assert.Equal(t, 1, effects(srv, "refund-hold-order-10"))
	info, err := s2.Show(bg, "order-10")
	require.NoError(t, err)
	assert.Equal(t, "cancelled", info.Cause)
	for _, st := range info.Steps {
		assert.Equal(t, "compensated", st.Resolution, st.Name)
	}
}

// Errors say what to do, and carry the run and step.
func TestErrorsNameRunAndStep(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		&saga.StepUnknownError{Run: "r", Step: "s", Key: "k", Err: idem.ErrOutcomeUnknown},
		&saga.StepConflictError{Run: "r", Step: "s", Reason: "changed"},
		&saga.NeedsOperatorError{Run: "r", Step: "s"},
		&saga.RunStateError{Run: "r", State: saga.Compensating, Op: "step", Step: "s"},
	} {
		assert.True(t, strings.Contains(err.Error(), `"r"`) && strings.Contains(err.Error(), `"s"`), err.Error())
		assert.NotContains(t, err.Error(), "%!")
	}
	require.ErrorIs(t, &saga.StepUnknownError{Err: idem.ErrOutcomeUnknown}, idem.ErrOutcomeUnknown)
}

// A local step's value is stored as JSON and decoded on every call; its
// function runs once.
func TestLocalJSONRunsOnce(t *testing.T) {
	t.Parallel()
	s, _, _ := newSaga(t)
	r, err := s.Run(bg, "order-11")
	require.NoError(t, err)
	type slot struct{ Shelf int }
	calls := 0
	reserve := func(context.Context) (any, error) { calls++; return slot{Shelf: 7}, nil }
	var got slot
	require.NoError(t, r.LocalJSON(bg, "reserve", &got, reserve))
	assert.Equal(t, 7, got.Shelf)
	again, err := s.Resume(bg, "order-11")
	require.NoError(t, err)
	var replayed slot
	require.NoError(t, again.LocalJSON(bg, "reserve", &replayed, reserve))
	assert.Equal(t, got, replayed)
	assert.Equal(t, 1, calls, "the stored result replays")

	failing := func(context.Context) (any, error) { calls++; return nil, errors.New("no shelf") }
	require.Error(t, again.LocalJSON(bg, "other", &replayed, failing))
	require.Error(t, again.LocalJSON(bg, "other", &replayed, failing), "an error stores nothing: the function runs again")
	assert.Equal(t, 3, calls)
}

// Two scopes (tenants) on one keystore: the same run id is two runs,
// with other keys at the provider, and each Saga lists its own.
func TestScopesKeepRunsApart(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	_, c, _ := newSaga(t)
	a, err := saga.New(c, saga.WithScope("tenant-a"))
	require.NoError(t, err)
	b, err := saga.New(c, saga.WithScope("tenant-b"), saga.WithKeySecret([]byte("0123456789abcdef")))
	require.NoError(t, err)
	_, err = saga.New(c, saga.WithScope("a@b"))
	require.ErrorIs(t, err, saga.ErrInvalid, "a scope holds no '@'")

	ra, err := a.Run(bg, "order-1")
	require.NoError(t, err)
	_, err = ra.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-a"))
	require.NoError(t, err)
	rb, err := b.Run(bg, "order-1")
	require.NoError(t, err)
	assert.Equal(t, saga.Running, rb.State())
	_, err = rb.Step(bg, "charge", payment(t, srv.URL, 2000, "charge-b"))
	require.NoError(t, err, "another scope's step of the same name is another intent")
	require.NoError(t, rb.Complete(bg))
	assert.Equal(t, saga.Running, ra.State())

	la, err := a.List(bg)
	require.NoError(t, err)
	require.Len(t, la, 1)
	assert.Equal(t, "order-1", la[0].ID)
	assert.Equal(t, saga.Running, la[0].State)
	ia, err := a.Show(bg, "order-1")
	require.NoError(t, err)
	ib, err := b.Show(bg, "order-1")
	require.NoError(t, err)
	assert.NotEqual(t, ia.Steps[0].Key, ib.Steps[0].Key)
	assert.Equal(t, saga.DeriveStepKey(nil, "tenant-a", "order-1", "charge", false), ia.Steps[0].Key)
	assert.Equal(t, saga.DeriveStepKey([]byte("0123456789abcdef"), "tenant-b", "order-1", "charge", false), ib.Steps[0].Key)

	unscoped, err := saga.New(c)
	require.NoError(t, err)
	none, err := unscoped.List(bg)
	require.NoError(t, err)
	assert.Empty(t, none, "the unscoped Saga sees no scope's runs")
	assert.Equal(t, "tenant-a", la[0].Scope)
	assert.Equal(t, "tenant-b", ib.Scope)

	_, err = unscoped.Run(bg, "order-1")
	require.NoError(t, err)
	all, err := unscoped.ListAll(bg)
	require.NoError(t, err)
	require.Len(t, all, 3, "every scope's runs, and the unscoped one")
	got := map[string]saga.State{}
	for _, r := range all {
		assert.Equal(t, "order-1", r.ID)
		got[r.Scope] = r.State
	}
	assert.Equal(t, map[string]saga.State{"tenant-a": saga.Running, "tenant-b": saga.Completed, "": saga.Running}, got)
	onlyA, err := a.List(bg)
	require.NoError(t, err)
	assert.Len(t, onlyA, 1, "List stays within its scope")
	assert.Equal(t, 1, effects(srv, "charge-a"))
	assert.Equal(t, 1, effects(srv, "charge-b"))
}

// A step left unknown past the provider's key retention is never resent
// (the provider may have forgotten its key): the run waits for a
// person's verdict on it, then compensates.
func TestExpiredStepWaitsForAVerdict(t *testing.T) {
	t.Parallel()
	const retention = 200 * time.Millisecond
	srv := idemtest.NewServer(t)
	// Attempts end well inside the retention, so one may start.
	s, c, _ := newSaga(t, idem.WithMaxAttempts(1), idem.WithRetention(retention), idem.WithHTTPClient(&http.Client{Timeout: retention / 4}))
	r, err := s.Run(bg, "order-12")
	require.NoError(t, err)
	refundFixed := saga.Compensate(func(*http.Response) (*http.Request, error) {
		return paymentReq(srv.URL, 1000, "refund-charge-order-12")
	})
	srv.LoseNextResponses(1)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-12"), refundFixed)
	var unknown *saga.StepUnknownError
	require.ErrorAs(t, err, &unknown)
	time.Sleep(retention + 100*time.Millisecond) // the key's retention ends

	sent := srv.Requests()
	require.ErrorIs(t, r.Fail(bg, err), saga.ErrStepUnknown)
	require.ErrorIs(t, r.Fail(bg, err), idem.ErrKeyExpired)
	assert.Equal(t, sent, srv.Requests(), "an expired step is never resent")
	require.ErrorIs(t, r.Complete(bg), saga.ErrRunNotRunning)

	_, err = c.Settle(bg, unknown.Key, idem.Settlement{Outcome: idem.OutcomeSucceeded, By: "ops", Note: "the ledger shows the charge"})
	require.NoError(t, err)
	require.NoError(t, r.Fail(bg, err))
	assert.Equal(t, saga.Compensated, r.State())
	assert.Equal(t, 1, effects(srv, "charge-order-12"))
	assert.Equal(t, 1, effects(srv, "refund-charge-order-12"))
}
