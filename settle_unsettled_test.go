package idem

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// unsettledRecords are records in every state whose outcome is unknown,
// as the keystore holds them: pending after a lost answer, accepted with
// its operation, expired, and failed with its operation gone as earlier
// builds stored it (ErrOperationGone, the poll's 404 kept as the answer).
func unsettledRecords(now time.Time) map[string]*keystore.Record {
	base := func(key string, state State) *keystore.Record {
		return &keystore.Record{
			Key: key, Method: http.MethodPost, URL: "https://pay.example/v1/payouts",
			Body: []byte(`{"amount": 100}`), Fingerprint: "fp-" + key, State: state,
			CreatedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour), Attempts: 1, MayHaveExecuted: true,
		}
	}
	accepted := base("accepted-1", Accepted)
	accepted.Operation = "https://pay.example/v1/operations/op_1"
	accepted.AcceptedAt = accepted.CreatedAt
	accepted.Response = &keystore.Response{Status: http.StatusAccepted, Header: http.Header{"Location": {"/v1/operations/op_1"}}}
	gone := base("gone-1", Failed)
	gone.Operation = "https://pay.example/v1/operations/op_2"
	gone.AcceptedAt = gone.CreatedAt
	gone.Response = &keystore.Response{Status: http.StatusNotFound, Body: []byte(`{"title": "Not Found"}`)}
	gone.LastError = "idem: gave up: the accepted operation is gone from the server; reconcile it (attempts=3, last status=404)"
	return map[string]*keystore.Record{
		"pending": base("pending-1", Pending), "accepted": accepted,
		"expired": base("expired-1", Expired), "gone": gone,
	}
}

// ErrOperationGone says "reconcile it": Settle and Reconcile accept every
// intent whose outcome is unknown, the Failed records earlier builds wrote
// for a gone operation included, on every keystore, and settle them either
// way.
func TestSettleAndReconcileAcceptEveryUnsettledIntent(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) keystore.Store{
		"memory": func(*testing.T) keystore.Store { return keystore.NewMemory() },
		"bolt": func(t *testing.T) keystore.Store {
			st, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "intents.db"), nil)
			require.NoError(t, err)
			return st
		},
		"postgres": func(t *testing.T) keystore.Store {
			dsn, opt := sharedKeystore(t) // skips without IDEM_TEST_POSTGRES
			st, err := keystore.Open(context.Background(), dsn, opt)
			require.NoError(t, err)
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := open(t)
			recs := unsettledRecords(time.Now())
			for _, r := range recs {
				_, _, err := st.Create(ctx, r)
				require.NoError(t, err)
			}
			verdicts := map[Outcome]Outcome{}
			c := newTestClient(t, WithStore(st), WithReconciler(func(_ context.Context, in *Intent) (Reconciliation, error) {
				return Reconciliation{Outcome: verdicts[OutcomeUnknown], Evidence: "payout po_9 paid"}, nil
			}))
			for kind, r := range recs {
				for _, o := range []Outcome{OutcomeSucceeded, OutcomeFailed} {
					again := r.Clone()
					again.Key, again.Fingerprint = r.Key+"-"+o.String(), r.Fingerprint+"-"+o.String()
					_, _, err := st.Create(ctx, again)
					require.NoError(t, err)
					in, err := c.Settle(ctx, again.Key, Settlement{Outcome: o, By: "alice", Note: "looked it up"})
					require.NoError(t, err, "%s settled %s", kind, o)
					assert.Equal(t, o.String(), string(in.State), kind)
				}
				verdicts[OutcomeUnknown] = OutcomeSucceeded
				in, err := c.Resume(ctx, r.Key)
				require.NoError(t, err)
				_, err = c.Reconcile(ctx, in)
				require.NoError(t, err, "%s reconciled", kind)
				assert.Equal(t, Succeeded, in.State, kind)
			}

			// A failure the server proved stays as it is.
			settled := recs["gone"].Clone()
			settled.Key, settled.Fingerprint, settled.Operation, settled.LastError = "refused-1", "fp-refused", "", "idem: gave up: final failure response"
			settled.Response = &keystore.Response{Status: http.StatusUnprocessableEntity}
			_, _, err := st.Create(ctx, settled)
			require.NoError(t, err)
			_, err = c.Settle(ctx, settled.Key, Settlement{Outcome: OutcomeSucceeded, By: "alice", Note: "?"})
			assert.ErrorIs(t, err, ErrNotReconcilable)
		})
	}
}
