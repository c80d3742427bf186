package saga_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// checkout is the saga every test runs: charge (refunded on failure), a
// local reservation (released on failure), ship (refunded on failure).
// shipAmount 0 makes the provider refuse the shipment.
// undone lists the compensations made, in order.
func checkout(ctx context.Context, r *saga.Run, url string, undone *[]string, shipAmount int) error {
	logged := func(step string) func(*http.Response) (*http.Request, error) {
		return func(resp *http.Response) (*http.Request, error) {
			*undone = append(*undone, step)
			return refund(url)(resp)
		}
	}
	if _, err := r.Step(ctx, "charge", mustReq(url, 1000, "charge-"+r.ID()), saga.Compensate(logged("charge"))); err != nil {
		return err
	}
	if _, err := r.Local(ctx, "reserve", func(context.Context) ([]byte, error) { return []byte(`{"slot":7}`), nil },
		saga.CompensateLocal(func(context.Context, []byte) error { *undone = append(*undone, "reserve"); return nil })); err != nil {
		return err
	}
	if _, err := r.Step(ctx, "ship", mustReq(url, shipAmount, "ship-"+r.ID()), saga.Compensate(logged("ship"))); err != nil {
		return err
	}
	return nil
}

func mustReq(url string, amount int, ref string) *http.Request {
	req, err := paymentReq(url, amount, ref)
	if err != nil {
		panic(err)
	}
	return req
}

func TestHappyPathCompletesAndReplaysLocally(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t)
	var undone []string
	r, err := s.Run(bg, "order-1")
	require.NoError(t, err)
	require.NoError(t, checkout(bg, r, srv.URL, &undone, 500))
	require.NoError(t, r.Complete(bg))
	assert.Equal(t, saga.Completed, r.State())
	sent := srv.Requests()

	// The same code again: every step replays from the keystore.
	again, err := s.Run(bg, "order-1")
	require.NoError(t, err)
	assert.Equal(t, saga.Completed, again.State())
	resp, err := again.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-1"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	assert.True(t, idem.IsLocalReplay(resp), "a settled step replays without the network")
	out, err := again.Local(bg, "reserve", func(context.Context) ([]byte, error) { panic("a stored local step never runs again") },
		saga.CompensateLocal(func(context.Context, []byte) error { return nil }))
	require.NoError(t, err)
	assert.JSONEq(t, `{"slot":7}`, string(out))
	require.NoError(t, again.Complete(bg), "Complete is idempotent")
	assert.Equal(t, sent, srv.Requests(), "nothing was sent again")
	require.ErrorIs(t, again.Fail(bg, errors.New("late")), saga.ErrRunNotRunning, "a completed run is never compensated")

	_, err = again.Step(bg, "receipt", payment(t, srv.URL, 1, "receipt"))
	var stateErr *saga.RunStateError
	require.ErrorAs(t, err, &stateErr, "a completed run takes no new step")
	assert.Equal(t, "receipt", stateErr.Step)
	assert.Equal(t, 1, effects(srv, "charge-order-1"))
	assert.Equal(t, 1, effects(srv, "ship-order-1"))
	assert.Empty(t, undone)

	info, err := s.Show(bg, "order-1")
	require.NoError(t, err)
	assert.Equal(t, saga.Completed, info.State)
	require.Len(t, info.Steps, 3)
	assert.Equal(t, idem.Succeeded, info.Steps[0].IntentState)
	assert.Equal(t, idem.State(""), info.Steps[0].CompensationState)
	assert.Equal(t, "local", info.Steps[1].Kind)
	list, err := s.List(bg)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, "order-1", list[0].ID)
}

// A later step the provider refuses: the earlier ones are compensated in
// reverse order, each compensation made once at the server, and a
// second Fail sends nothing.
func TestFailedStepCompensatesInReverseOnce(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t)
	var undone []string
	r, err := s.Run(bg, "order-2")
	require.NoError(t, err)
	err = checkout(bg, r, srv.URL, &undone, 0)
	require.ErrorIs(t, err, idem.ErrFinalFailure, "the shipment is refused")
	require.NoError(t, r.Fail(bg, err))
	assert.Equal(t, saga.Compensated, r.State())
	assert.Equal(t, 1, effects(srv, "charge-order-2"))
	assert.Equal(t, 1, effects(srv, "refund-charge-order-2"), "the charge is refunded once")
	assert.Zero(t, effects(srv, "refund-ship-order-2"), "a refused step has nothing to undo")
	assert.Equal(t, []string{"reserve", "charge"}, undone, "reverse order; the refused shipment has nothing to undo")

	sent := srv.Requests()
	require.NoError(t, r.Fail(bg, err), "Fail is idempotent")
	assert.Equal(t, sent, srv.Requests())
	info, err := s.Show(bg, "order-2")
	require.NoError(t, err)
	assert.Contains(t, info.Cause, "final failure", "Fail's cause is kept")
	for _, st := range info.Steps {
		assert.True(t, st.Compensated, st.Name)
	}
	assert.Equal(t, idem.Succeeded, info.Steps[0].CompensationState)
	assert.Equal(t, idem.Failed, info.Steps[2].IntentState)
}

// Once compensating, a step that never began cannot begin; steps that
// began replay, so a resumed program reaches its Fail again.
func TestCompensatingRunRefusesANewStep(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t)
	r, err := s.Run(bg, "order-3")
	require.NoError(t, err)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-3"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	require.NoError(t, r.Fail(bg, errors.New("customer cancelled")))
	before := srv.Requests()

	_, err = r.Step(bg, "ship", payment(t, srv.URL, 500, "ship-order-3"))
	var stateErr *saga.RunStateError
	require.ErrorAs(t, err, &stateErr)
	assert.Equal(t, saga.Compensated, stateErr.State)
	_, err = r.Local(bg, "reserve", func(context.Context) ([]byte, error) { return nil, nil })
	require.ErrorIs(t, err, saga.ErrRunNotRunning)
	assert.Equal(t, before, srv.Requests(), "nothing was sent")
	resp, err := r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-3"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err, "a step that began replays")
	assert.True(t, idem.IsLocalReplay(resp))
	assert.Equal(t, 1, effects(srv, "refund-charge-order-3"))
}

// A step whose request changed under its name is a conflict, never a
// new call; so is a step called with another kind.
func TestChangedStepIsAConflict(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t)
	r, err := s.Run(bg, "order-4")
	require.NoError(t, err)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-4"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	sent := srv.Requests()

	_, err = r.Step(bg, "charge", payment(t, srv.URL, 2000, "charge-order-4"), saga.Compensate(refund(srv.URL)))
	var conflict *saga.StepConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "charge", conflict.Step)
	require.ErrorIs(t, err, idem.ErrIntentConflict)

	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-4"))
	require.ErrorIs(t, err, saga.ErrStepConflict, "a step that began with a compensation keeps it")
	_, err = r.Local(bg, "charge", func(context.Context) ([]byte, error) { return nil, nil })
	require.ErrorIs(t, err, saga.ErrStepConflict, "an HTTP step is not a local one")
	assert.Equal(t, sent, srv.Requests())
	assert.Equal(t, 1, effects(srv, "charge-order-4"))
}

// A lost answer with retries exhausted: the run reports the step as
// unknown and neither completes nor compensates past it until it
// settles; once the provider answers, Fail resends it with its key (a
// replay, not a second charge) and refunds it once.
func TestUnknownStepBlocksUntilSettled(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t, idem.WithMaxAttempts(1))
	r, err := s.Run(bg, "order-5")
	require.NoError(t, err)
	srv.LoseNextResponses(1)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-5"), saga.Compensate(refund(srv.URL)))
	var unknown *saga.StepUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.Equal(t, "charge", unknown.Step)
	assert.False(t, unknown.Compensation)
	require.ErrorIs(t, err, idem.ErrOutcomeUnknown)
	assert.Equal(t, 1, effects(srv, "charge-order-5"), "the charge happened; the client cannot know")

	require.ErrorIs(t, r.Complete(bg), saga.ErrStepUnknown, "never completed past an unknown step")
	assert.Equal(t, saga.Running, r.State())

	srv.LoseNextResponses(1) // the provider still does not answer
	require.ErrorIs(t, r.Fail(bg, err), saga.ErrStepUnknown, "never compensated past an unknown step")
	assert.Equal(t, saga.Compensating, r.State())
	assert.Zero(t, effects(srv, "refund-charge-order-5"), "no refund on a guess")

	require.NoError(t, r.Fail(bg, err), "the resend settles it: a replay")
	assert.Equal(t, saga.Compensated, r.State())
	assert.Equal(t, 1, effects(srv, "charge-order-5"))
	assert.Equal(t, 1, effects(srv, "refund-charge-order-5"))
}

// A compensation the provider refuses cannot be proven: the run needs
// an operator, whose verdict (ResolveStep) lets Fail go on.
func TestRefusedCompensationNeedsAnOperator(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, _, _ := newSaga(t)
	r, err := s.Run(bg, "order-6")
	require.NoError(t, err)
	var undone []string
	err = checkout(bg, r, srv.URL, &undone, 0)
	require.ErrorIs(t, err, idem.ErrFinalFailure)
	srv.FailNext(1, http.StatusUnprocessableEntity, 0) // the refund is refused
	err = r.Fail(bg, err)
	var needs *saga.NeedsOperatorError
	require.ErrorAs(t, err, &needs)
	assert.Equal(t, "charge", needs.Step)
	assert.Equal(t, saga.NeedsOperator, r.State())
	info, err := s.Show(bg, "order-6")
	require.NoError(t, err)
	assert.Contains(t, info.Problem, "needs an operator")
	assert.Equal(t, idem.Failed, info.Steps[0].CompensationState)

	require.ErrorIs(t, r.Fail(bg, nil), saga.ErrNeedsOperator, "a refused compensation is never resent")
	assert.Zero(t, effects(srv, "refund-charge-order-6"))

	require.ErrorIs(t, s.ResolveStep(bg, "order-6", "charge", saga.Resolution{By: "ops"}), saga.ErrInvalid, "who and why are required")
	require.NoError(t, s.ResolveStep(bg, "order-6", "charge", saga.Resolution{By: "ops@example", Note: "refunded by hand, ticket 9"}))
	again, err := s.Resume(bg, "order-6")
	require.NoError(t, err)
	assert.Equal(t, saga.Compensating, again.State())
	require.NoError(t, again.Fail(bg, nil))
	assert.Equal(t, saga.Compensated, again.State())
	info, err = s.Show(bg, "order-6")
	require.NoError(t, err)
	assert.Equal(t, "resolved by ops@example: refunded by hand, ticket 9", info.Steps[0].Resolution)
}

// The process dies mid-run: a new Client on the same bbolt file takes the
// run up, the settled steps replay without a send, and the run goes on.
func TestResumeAfterRestartReplaysSettledSteps(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, c, path := newSaga(t)
	r, err := s.Run(bg, "order-7")
	require.NoError(t, err)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-7"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	require.NoError(t, c.Close()) // the process "dies" here

	c2 := boltClient(t, path)
	s2, err := saga.New(c2)
	require.NoError(t, err)
	sent := srv.Requests()
	r2, err := s2.Resume(bg, "order-7")
	require.NoError(t, err)
	assert.Equal(t, saga.Running, r2.State())
	var undone []string
	require.NoError(t, checkout(bg, r2, srv.URL, &undone, 500))
	assert.Equal(t, sent+1, srv.Requests(), "only the shipment was sent")
	require.NoError(t, r2.Complete(bg))
	assert.Equal(t, 1, effects(srv, "charge-order-7"))
	assert.Equal(t, 1, effects(srv, "ship-order-7"))

	_, err = s2.Resume(bg, "order-none")
	require.ErrorIs(t, err, saga.ErrRunNotFound)
}

// The keystore is lost: the derived keys make the resend of a step a
// replay at the provider (one effect), and a changed request there a
// conflict.
func TestLostKeystoreResendReplaysAtTheServer(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	s, c, path := newSaga(t)
	r, err := s.Run(bg, "order-8")
	require.NoError(t, err)
	_, err = r.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-8"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, os.Remove(path))

	s2, _, _ := newSaga(t) // a new, empty keystore
	r2, err := s2.Run(bg, "order-8")
	require.NoError(t, err)
	resp, err := r2.Step(bg, "charge", payment(t, srv.URL, 1000, "charge-order-8"), saga.Compensate(refund(srv.URL)))
	require.NoError(t, err)
	assert.True(t, idem.IsReplay(resp), "the provider replays its stored answer")
	assert.False(t, idem.IsLocalReplay(resp))
	assert.Equal(t, 1, effects(srv, "charge-order-8"), "one charge")

	s3, _, _ := newSaga(t)
	r3, err := s3.Run(bg, "order-8")
	require.NoError(t, err)
	_, err = r3.Step(bg, "charge", payment(t, srv.URL, 2000, "charge-order-8"))
	require.ErrorIs(t, err, saga.ErrStepConflict, "the provider holds the key for the first request")
	require.ErrorIs(t, err, idem.ErrKeyReused)
	assert.Equal(t, 1, effects(srv, "charge-order-8"))
}

func TestDeriveStepKey(t *testing.T) {
	t.Parallel()
	k := saga.DeriveStepKey(nil, "", "order-1", "charge", false)
	assert.Equal(t, k, saga.DeriveStepKey(nil, "", "order-1", "charge", false), "deterministic")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, k, "a version 8 UUID")
	others := []string{
		saga.DeriveStepKey(nil, "", "order-1", "charge", true),
		saga.DeriveStepKey(nil, "", "order-2", "charge", false),
		saga.DeriveStepKey(nil, "", "order-1", "ship", false),
		saga.DeriveStepKey(nil, "tenant-a", "order-1", "charge", false),
		saga.DeriveStepKey([]byte("0123456789abcdef"), "", "order-1", "charge", false),
		saga.DeriveStepKey(nil, "", "order-1c", "harge", false), // fields are length-prefixed
	}
	seen := map[string]bool{k: true}
	for _, o := range others {
		assert.False(t, seen[o], "distinct inputs, distinct keys")
		seen[o] = true
	}
	// Pinned: the derivation is part of the protocol (PROTOCOL.md); a
	// change would give running sagas other keys.
	assert.Equal(t, pinnedKey, k)
}

func TestInvalidArguments(t *testing.T) {
	t.Parallel()
	s, _, _ := newSaga(t)
	for _, id := range []string{"", "a/b", "with space", string(make([]byte, 129))} {
		_, err := s.Run(bg, id)
		require.ErrorIs(t, err, saga.ErrInvalid, "%q", id)
	}
	r, err := s.Run(bg, "ok")
	require.NoError(t, err)
	_, err = r.Step(bg, "a/b", nil)
	require.ErrorIs(t, err, saga.ErrInvalid)
	_, err = r.Local(bg, "x", nil)
	require.ErrorIs(t, err, saga.ErrInvalid)
	_, err = r.Step(bg, "x", nil, saga.Compensate(nil))
	require.ErrorIs(t, err, saga.ErrInvalid)
	_, err = r.Local(bg, "big", func(context.Context) ([]byte, error) { return make([]byte, saga.MaxLocalResult+1), nil })
	require.ErrorIs(t, err, saga.ErrInvalid)
	_, err = r.Step(bg, "nilreq", nil)
	require.ErrorIs(t, err, idem.ErrInvalidRequest)
	_, err = saga.New(&idem.Client{})
	require.ErrorIs(t, err, idem.ErrClientNotOpen)
	_, err = saga.New(c0(t), saga.WithKeySecret([]byte("short")))
	require.ErrorIs(t, err, saga.ErrInvalid)
}

// c0 is a client on the memory keystore, which keeps runs too.
func c0(t *testing.T) *idem.Client {
	c, err := idem.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A keystore that keeps no runs is refused by New.
func TestKeystoreWithoutRunsIsRefused(t *testing.T) {
	t.Parallel()
	c, err := idem.New(idem.WithStore(plainStore{keystore.NewMemory()}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = saga.New(c)
	require.ErrorIs(t, err, saga.ErrNoRunKeeper)
}

// plainStore hides every optional interface of the store it wraps.
type plainStore struct{ keystore.Store }
