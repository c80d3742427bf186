package testserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/idemkit/idem/server"
)

// Operation kinds and statuses.
const (
	operationKindPayout = "payout"
	operationPending    = "pending"
	operationSucceeded  = "succeeded"
)

// DefaultPayoutDelay is how long a payout stays pending before it settles.
const DefaultPayoutDelay = 2 * time.Second

// operationDocument is the body of the 202 a payout answers and of
// GET /v1/operations/{id}. Its status is computed from the clock and the
// operation's settle time, so no background work is needed.
type operationDocument struct {
	ID        string     `json:"id"`
	Kind      string     `json:"kind"`
	Status    string     `json:"status"`
	Amount    int64      `json:"amount"`
	Currency  string     `json:"currency"`
	Reference string     `json:"reference,omitempty"`
	Created   time.Time  `json:"created"`
	Settled   *time.Time `json:"settled,omitempty"`
}

// describeOperation returns op's document as of now, and how long until it
// settles (zero once settled).
func describeOperation(op Operation, now time.Time) (operationDocument, time.Duration) {
	doc := operationDocument{
		ID:        op.ID,
		Kind:      op.Kind,
		Status:    operationPending,
		Amount:    op.Amount,
		Currency:  op.Currency,
		Reference: op.Reference,
		Created:   op.Created,
	}
	remaining := op.SettleAt.Sub(now)
	if remaining <= 0 {
		settled := op.SettleAt
		doc.Status = operationSucceeded
		doc.Settled = &settled
		remaining = 0
	}
	return doc, remaining
}

// createPayout accepts a payout and answers 202 with the operation to
// poll. The 202 is committed with the key, so every replay returns the
// same operation.
func (a *paymentsAPI) createPayout(w http.ResponseWriter, r *http.Request) {
	principal, req, ok := a.readMoneyRequest(w, r)
	if !ok {
		return
	}
	now := a.now().UTC()
	op := Operation{
		ID:        newID(operationIDPrefix),
		Principal: principal,
		Kind:      operationKindPayout,
		Amount:    req.Amount,
		Currency:  req.Currency,
		Reference: req.Reference,
		Created:   now,
		SettleAt:  now.Add(a.payoutDelay),
	}
	doc, remaining := describeOperation(op, now)
	resp, err := jsonResponse(http.StatusAccepted, doc)
	if err != nil {
		a.writeInternalError(w, err)
		return
	}
	resp.Header.Set("Location", "/v1/operations/"+op.ID)
	resp.Header.Set("Retry-After", strconv.Itoa(server.RetryAfterSeconds(remaining)))
	resp.ResourceID = op.ID
	a.commit(w, r, resp, func(ctx context.Context, c *Completion) error {
		return a.store.CreateOperation(ctx, op, c)
	})
}

// getOperation answers the operation's current state, with Retry-After
// while it is pending.
func (a *paymentsAPI) getOperation(w http.ResponseWriter, r *http.Request) {
	principal, ok := a.requirePrincipal(w, r)
	if !ok {
		return
	}
	op, err := a.store.GetOperation(r.Context(), principal, r.PathValue("id"))
	if err != nil {
		a.writeStoreError(w, err, "operation")
		return
	}
	doc, remaining := describeOperation(op, a.now())
	if remaining > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(server.RetryAfterSeconds(remaining)))
	}
	a.writeJSON(w, http.StatusOK, doc)
}
