package testserver

import (
	"context"
	"errors"
	"time"

	"github.com/idemkit/idem/server"
)

// ErrNotFound means the payment or operation does not exist for the
// principal that asked. Callers match it with errors.Is.
var ErrNotFound = errors.New("testserver: not found")

// Payment is one payment created through POST /v1/payments.
type Payment struct {
	ID        string    `json:"id"`
	Principal string    `json:"-"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	Reference string    `json:"reference,omitempty"`
	Status    string    `json:"status"`
	Created   time.Time `json:"created"`
}

// Operation is the asynchronous operation a payout creates; it settles at
// SettleAt.
type Operation struct {
	ID        string    `json:"id"`
	Principal string    `json:"-"`
	Kind      string    `json:"kind"`
	Amount    int64     `json:"amount"`
	Currency  string    `json:"currency"`
	Reference string    `json:"reference,omitempty"`
	Created   time.Time `json:"created"`
	SettleAt  time.Time `json:"-"`
}

// Store keeps the idempotency records (server.Store) and the payments
// API's data. Every method is safe for concurrent use. The Completion of
// CreatePayment/CreateOperation is a compare-and-set on the fencing token
// committed with the effect, like server.Store's Complete.
type Store interface {
	server.Store
	// CreatePayment inserts p; with c non-nil it completes c's reservation
	// in the same atomic step, and writes nothing if that fails.
	CreatePayment(ctx context.Context, p Payment, c *Completion) error
	// GetPayment returns the principal's payment, or ErrNotFound.
	GetPayment(ctx context.Context, principal, id string) (Payment, error)
	// ListPayments returns the principal's payments, newest first.
	ListPayments(ctx context.Context, principal string) ([]Payment, error)
	// CountPayments returns the number of payments of every principal.
	CountPayments(ctx context.Context) (int, error)

	// CreateOperation inserts op, completing c like CreatePayment.
	CreateOperation(ctx context.Context, op Operation, c *Completion) error
	// GetOperation returns the principal's operation, or ErrNotFound.
	GetOperation(ctx context.Context, principal, id string) (Operation, error)
}
