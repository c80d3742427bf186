package idem

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// paymentByReference is a Reconciler that asks the reference server for
// the caller's payments and looks for the intent's reference, as a real
// integration asks its provider by its own order id.
func paymentByReference(baseURL, reference string) Reconciler {
	return func(ctx context.Context, in *Intent) (Reconciliation, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/v1/payments", nil)
		if err != nil {
			return Reconciliation{}, err
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return Reconciliation{}, err
		}
		defer resp.Body.Close()
		var list struct {
			Payments []struct {
				ID        string `json:"id"`
				Reference string `json:"reference"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
			return Reconciliation{}, err
		}
		for _, p := range list.Payments {
			if p.Reference == reference {
				return Reconciliation{Outcome: OutcomeSucceeded, Evidence: "payment " + p.ID + " has reference " + reference}, nil
			}
		}
		return Reconciliation{Outcome: OutcomeFailed, Evidence: "no payment has reference " + reference}, nil
	}
}

// expiredCredentialsFront loses the origin's first answer and answers 401
// to every later attempt.
func expiredCredentialsFront(t *testing.T) (*idemtest.Server, *front) {
	t.Helper()
	origin := idemtest.NewServer(t)
	origin.LoseNextResponses(1)
	f := newFront(t, origin.URL, func(n int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		if n == 1 {
			return false
		}
		answer(w, http.StatusUnauthorized, nil, "")
		return true
	})
	return origin, f
}

func TestDoRunsTheReconcilerWhereResendingCannotSettle(t *testing.T) {
	t.Parallel()
	origin, f := expiredCredentialsFront(t)
	c := newTestClient(t, WithMaxAttempts(2), WithReconciler(paymentByReference(origin.URL, "order-7")))
	in := begin(t, c, "order-7/payment", paymentRequest(t, f.URL, 700, "order-7"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, in.State)
	assert.Equal(t, "reconciler", resp.Header.Get(SettlementHeader))
	require.Len(t, in.Reconciliations, 1)
	assert.Equal(t, keystore.ReconciledSucceeded, in.Reconciliations[0].Outcome)
	assert.Contains(t, in.Reconciliations[0].Note, "has reference order-7")
	assert.Equal(t, 1, origin.PaymentCount())

	again, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.True(t, IsLocalReplay(again), "a reconciled intent replays locally")
	assert.EqualValues(t, 2, f.requests.Load(), "nothing more was sent")
}

func TestReconcilerThatDoesNotKnowChangesNothing(t *testing.T) {
	t.Parallel()
	_, f := expiredCredentialsFront(t)
	var asked atomic.Int32
	c := newTestClient(t, WithMaxAttempts(2), WithReconciler(func(context.Context, *Intent) (Reconciliation, error) {
		asked.Add(1)
		return Reconciliation{Outcome: OutcomeUnknown, Evidence: "provider search timed out"}, nil
	}))
	in := begin(t, c, "", paymentRequest(t, f.URL, 700, "unknown"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, Pending, in.State)
	assert.EqualValues(t, 1, asked.Load())
	require.Len(t, in.Reconciliations, 1, "the inquiry is on record")
	assert.Equal(t, keystore.ReconciledUnknown, in.Reconciliations[0].Outcome)

	_, err = c.Reconcile(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Len(t, in.Reconciliations, 2)
}

func TestReconcilerErrorsLeaveTheIntentAsItWas(t *testing.T) {
	t.Parallel()
	_, f := expiredCredentialsFront(t)
	boom := errors.New("provider unreachable")
	c := newTestClient(t, WithMaxAttempts(2), WithReconciler(func(context.Context, *Intent) (Reconciliation, error) {
		return Reconciliation{}, boom
	}))
	in := begin(t, c, "", paymentRequest(t, f.URL, 700, "boom"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, Pending, in.State)
	assert.Empty(t, in.Reconciliations)
}

func TestExpiredIntentsAreReconciled(t *testing.T) {
	t.Parallel()
	origin := idemtest.NewServer(t)
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	c := newTestClient(t, withClock(func() time.Time { return time.Unix(0, clock.Load()) }),
		WithReconciler(paymentByReference(origin.URL, "never-sent")))
	in := begin(t, c, "", paymentRequest(t, origin.URL, 700, "never-sent"))
	clock.Store(now.Add(DefaultRetention + time.Hour).UnixNano())
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrFinalFailure)
	assert.Equal(t, Failed, in.State)
	assert.Contains(t, in.LastError, "no payment has reference never-sent")
	assert.Zero(t, origin.PaymentCount(), "an expired intent is never resent")
}

func TestSettleByHand(t *testing.T) {
	t.Parallel()
	_, f := expiredCredentialsFront(t)
	c := newTestClient(t, WithMaxAttempts(2))
	in := begin(t, c, "order-9/payment", paymentRequest(t, f.URL, 900, "order-9"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)

	_, err = c.Settle(context.Background(), in.Key, Settlement{Outcome: OutcomeSucceeded, By: "alice"})
	require.Error(t, err, "a verdict needs its reason")
	_, err = c.Settle(context.Background(), in.Key, Settlement{Outcome: OutcomeUnknown, By: "alice", Note: "?"})
	require.Error(t, err)

	settled, err := c.Settle(context.Background(), in.Key, Settlement{Outcome: OutcomeSucceeded, By: "alice", Note: "pay_123 in the provider dashboard"})
	require.NoError(t, err)
	assert.Equal(t, Succeeded, settled.State)
	require.Len(t, settled.Reconciliations, 1)
	got := settled.Reconciliations[0]
	assert.Equal(t, "manual", got.Source)
	assert.Equal(t, "alice", got.By)
	assert.Equal(t, "pay_123 in the provider dashboard", got.Note)
	assert.False(t, got.At.IsZero())

	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.NotNil(t, resp, "a settled intent never answers nil, nil")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "manual", resp.Header.Get(SettlementHeader))
	assert.Contains(t, readBody(t, resp), "pay_123 in the provider dashboard")

	_, err = c.Settle(context.Background(), in.Key, Settlement{Outcome: OutcomeFailed, By: "bob", Note: "changed my mind"})
	assert.ErrorIs(t, err, ErrNotReconcilable, "a settled intent stays settled")
}

func TestReconcileWithoutAReconciler(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "none"))
	_, err := c.Reconcile(context.Background(), in)
	assert.ErrorIs(t, err, ErrNotReconcilable)
	assert.Zero(t, srv.Requests())
}
