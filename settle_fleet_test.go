package idem

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// inFlight starts worker's Do on in and waits until the server holds its
// attempt (the handler delay keeps it there); the returned channel gives
// Do's answer.
func inFlight(t *testing.T, srv *idemtest.Server, worker *Client, in *Intent) <-chan doAnswer {
	t.Helper()
	done := make(chan doAnswer, 1)
	go func() {
		resp, err := worker.Do(context.Background(), in)
		done <- doAnswer{resp, err}
	}()
	require.Eventually(t, func() bool { return srv.Holding() == 1 }, 10*time.Second, 5*time.Millisecond,
		"the worker's attempt must reach the server")
	return done
}

type doAnswer struct {
	resp *http.Response
	err  error
}

// A verdict given while a fleet worker holds the intent with an attempt
// in flight is refused (ErrIntentBusy); forced, it is recorded, and the
// worker's late 201 is kept in the audit trail as conflicting evidence:
// its Do says the answer conflicts with the verdict, never that the
// payment failed.
func TestForcedSettleKeepsTheWorkersLateAnswer(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	srv.SetHandlerDelay(2 * time.Second)
	worker, operator := worker(t, dsn, opt), worker(t, dsn, opt)
	ctx := context.Background()

	in := begin(t, worker, "order-7", paymentRequest(t, srv.URL, 700, "order-7"))
	done := inFlight(t, srv, worker, in)

	verdict := Settlement{Outcome: OutcomeFailed, By: "alice", Note: "not in the dashboard"}
	_, err := operator.Settle(ctx, in.Key, verdict)
	require.ErrorIs(t, err, ErrIntentBusy, "a worker holds the intent with an attempt in flight")
	assert.Contains(t, err.Error(), "Force")
	_, err = operator.Reconcile(ctx, in)
	require.Error(t, err)

	verdict.Force = true
	settled, err := operator.Settle(ctx, in.Key, verdict)
	require.NoError(t, err)
	assert.Equal(t, Failed, settled.State)

	got := <-done
	require.Error(t, got.err)
	assert.NotErrorIs(t, got.err, ErrFinalFailure, "the server answered 201: the payment was made")
	require.ErrorIs(t, got.err, ErrVerdictConflict)
	var conflict *VerdictConflictError
	require.ErrorAs(t, got.err, &conflict)
	assert.Equal(t, http.StatusCreated, conflict.Status)
	require.NotNil(t, got.resp)
	assert.Equal(t, http.StatusCreated, got.resp.StatusCode, "Do hands back the server's answer")
	assert.Equal(t, 1, srv.PaymentCount())

	stored, err := operator.Resume(ctx, in.Key)
	require.NoError(t, err)
	assert.Equal(t, Failed, stored.State, "the verdict stands; the conflict is for a person")
	require.Len(t, stored.Reconciliations, 2)
	late := stored.Reconciliations[1]
	assert.Equal(t, keystore.ReconciledConflict, late.Outcome)
	assert.Equal(t, "server", late.Source)
	assert.Equal(t, worker.ClaimOwner(), late.By)
	assert.Contains(t, late.Note, "status 201")

	// Every later Do, on any worker, says so again.
	_, err = operator.Do(ctx, stored)
	require.ErrorIs(t, err, ErrVerdictConflict)
	assert.NotErrorIs(t, err, ErrFinalFailure)
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, http.StatusCreated, conflict.Status)
	assert.Equal(t, 1, srv.Requests(), "nothing is sent again")
}

// Settle waits for no one on an intent nobody holds: it claims it, so no
// worker sends it meanwhile, and releases it after.
func TestSettleClaimsAFreeIntent(t *testing.T) {
	t.Parallel()
	dsn, opt := sharedKeystore(t)
	srv := idemtest.NewServer(t)
	producer, operator, next := worker(t, dsn, opt), worker(t, dsn, opt), worker(t, dsn, opt)
	ctx := context.Background()
	in := begin(t, producer, "order-8", paymentRequest(t, srv.URL, 800, "order-8"))
	require.NoError(t, producer.Close()) // hands its unsent claim over

	_, err := operator.Settle(ctx, in.Key, Settlement{Outcome: OutcomeFailed, By: "alice", Note: "cancelled upstream"})
	require.NoError(t, err)
	taken, err := next.ClaimPending(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, taken, "a settled intent is nobody's work")
	assert.Zero(t, srv.Requests())
}
