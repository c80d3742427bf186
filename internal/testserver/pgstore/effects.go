package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server/pgstore"
)

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// CreatePayment implements testserver.Store: the payment row and, with c
// non-nil, the key's completion commit in one transaction.
func (s *Store) CreatePayment(ctx context.Context, p testserver.Payment, c *testserver.Completion) error {
	if p.ID == "" {
		return errors.New("pgstore: payment needs an id")
	}
	if err := checkText("payment id", p.ID, "principal", p.Principal, "currency", p.Currency,
		"reference", p.Reference, "status", p.Status); err != nil {
		return err
	}
	err := describeInsert(s.withCompletion(ctx, c, s.q.insertPayment,
		p.Principal, p.ID, p.Amount, p.Currency, p.Reference, p.Status, p.Created), "payment", p.ID)
	if err != nil {
		return fmt.Errorf("pgstore: create payment: %w", err)
	}
	return nil
}

// CreateOperation implements testserver.Store like CreatePayment.
func (s *Store) CreateOperation(ctx context.Context, op testserver.Operation, c *testserver.Completion) error {
	if op.ID == "" {
		return errors.New("pgstore: operation needs an id")
	}
	if err := checkText("operation id", op.ID, "principal", op.Principal, "kind", op.Kind,
		"currency", op.Currency, "reference", op.Reference); err != nil {
		return err
	}
	err := describeInsert(s.withCompletion(ctx, c, s.q.insertOperation,
		op.Principal, op.ID, op.Kind, op.Amount, op.Currency, op.Reference, op.Created, op.SettleAt), "operation", op.ID)
	if err != nil {
		return fmt.Errorf("pgstore: create operation: %w", err)
	}
	return nil
}

// withCompletion runs the insert query with args and, when c is
// non-nil, completes c's reservation in the same transaction, one round
// trip for both (CompleteBatch). The completion runs first: it locks the
// record row, so a concurrent takeover waits for this commit or fences
// it, and a fenced completion aborts the insert with it. Without a
// completion the insert is a statement of its own, committed alone, as
// a handler without the idempotency layer would write it, unless ctx
// carries a one-commit transaction (pgstore.OnceFrom), which it joins.
func (s *Store) withCompletion(ctx context.Context, c *testserver.Completion, query string, args ...any) error {
	if c == nil {
		if once, ok := pgstore.OnceFrom(ctx); ok {
			// One-commit mode: the statement commits with the key's
			// record and answer once the handler has answered.
			once.Queue(query, args...)
			return nil
		}
		_, err := s.pool.Exec(ctx, query, args...)
		return err
	}
	b := &pgx.Batch{}
	b.Queue(query, args...)
	return s.CompleteBatch(ctx, *c, b)
}

// describeInsert turns a duplicate-key failure into a readable error.
func describeInsert(err error, kind, id string) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation {
		return fmt.Errorf("%s %q already exists", kind, id)
	}
	return err
}

// GetPayment implements testserver.Store.
func (s *Store) GetPayment(ctx context.Context, principal, id string) (testserver.Payment, error) {
	p, err := scanPayment(s.pool.QueryRow(ctx, s.q.getPayment, principal, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return testserver.Payment{}, testserver.ErrNotFound
	}
	if err != nil {
		return testserver.Payment{}, fmt.Errorf("pgstore: get payment: %w", err)
	}
	return p, nil
}

// ListPayments implements testserver.Store; payments created at the same
// instant come newest insertion first.
func (s *Store) ListPayments(ctx context.Context, principal string) ([]testserver.Payment, error) {
	rows, err := s.pool.Query(ctx, s.q.listPayments, principal)
	if err != nil {
		return nil, fmt.Errorf("pgstore: list payments: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (testserver.Payment, error) {
		return scanPayment(row)
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: list payments: %w", err)
	}
	if out == nil {
		out = []testserver.Payment{}
	}
	return out, nil
}

// CountPayments implements testserver.Store.
func (s *Store) CountPayments(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, s.q.countPayments).Scan(&n); err != nil {
		return 0, fmt.Errorf("pgstore: count payments: %w", err)
	}
	return n, nil
}

// GetOperation implements testserver.Store.
func (s *Store) GetOperation(ctx context.Context, principal, id string) (testserver.Operation, error) {
	var op testserver.Operation
	err := s.pool.QueryRow(ctx, s.q.getOperation, principal, id).Scan(
		&op.ID, &op.Principal, &op.Kind, &op.Amount, &op.Currency, &op.Reference, &op.Created, &op.SettleAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return testserver.Operation{}, testserver.ErrNotFound
	}
	if err != nil {
		return testserver.Operation{}, fmt.Errorf("pgstore: get operation: %w", err)
	}
	return op, nil
}

func scanPayment(row pgx.Row) (testserver.Payment, error) {
	var p testserver.Payment
	err := row.Scan(&p.ID, &p.Principal, &p.Amount, &p.Currency, &p.Reference, &p.Status, &p.Created)
	return p, err
}
