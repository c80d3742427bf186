package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/saga"
)

// The states of an order. pending and paid are on the way (the completer
// takes them up); the others are final, needs_operator until a person
// resolves the run (`idem runs resolve`) and the completer goes on.
const (
	statePending       = "pending"
	statePaid          = "paid"
	stateCompleted     = "completed"
	stateCompensated   = "compensated"
	stateFailed        = "failed"
	stateNeedsOperator = "needs_operator"
)

// chargeStep and shipStep are the saga's steps; the run is the order.
const (
	chargeStep = "charge"
	shipStep   = "ship"
)

// chargeIntent is the name the saga gives the charge step's intent
// (saga/<run>/<step>, PROTOCOL Choice 58): the handler begins it under
// this name and the step's key in the order's transaction, and the saga's
// Step finds it there.
func chargeIntent(orderID string) string { return "saga/" + orderID + "/" + chargeStep }

// advance drives the order's saga as far as it goes now: the charge, the
// order paid with its outbox row, the booking, and the run completed, or
// compensated (the charge refunded) when the carrier refuses. The same
// code runs in the handler and in the completer, after any crash: settled
// steps replay from the keystore, nothing is sent twice. It returns the
// order's state; an error means "later" (an outcome not known yet,
// another worker holding a step, a store that did not answer), and the
// order stays where it is for the completer.
func (s *service) advance(ctx context.Context, id string) (string, error) {
	o, state, err := s.loadOrder(ctx, id)
	if err != nil {
		return "", err
	}
	run, err := s.saga.Run(ctx, id)
	if err != nil {
		return state, err
	}
	charge, err := s.p.charge(ctx, o)
	if err != nil {
		return state, err
	}
	crashPoint("charge-before-call")
	_, err = run.Step(ctx, chargeStep, charge, saga.Compensate(s.p.refund(ctx)))
	crashPoint("charge-after-call")
	if err != nil {
		return s.stopped(ctx, run, o, state, stateFailed, err)
	}
	if err := s.markPaid(ctx, o); err != nil {
		return state, err
	}
	ship, err := s.p.ship(ctx, o)
	if err != nil {
		return statePaid, err
	}
	crashPoint("ship-before-call")
	_, err = run.Step(ctx, shipStep, ship)
	crashPoint("ship-after-call")
	if err != nil {
		return s.stopped(ctx, run, o, statePaid, stateCompensated, err)
	}
	if err := run.Complete(ctx); err != nil {
		return statePaid, err
	}
	return stateCompleted, s.finish(ctx, o, stateCompleted, "")
}

// stopped handles a step's error: a refusal fails the run (the saga
// refunds what was charged) and the order ends refused; anything else
// leaves the order as it is, for later.
func (s *service) stopped(ctx context.Context, run *saga.Run, o order, state, refused string, stepErr error) (string, error) {
	if !errors.Is(stepErr, idem.ErrFinalFailure) && run.State() == saga.Running {
		return state, stepErr
	}
	err := run.Fail(ctx, stepErr)
	crashPoint("refund-after-call")
	var needs *saga.NeedsOperatorError
	switch {
	case errors.As(err, &needs):
		return stateNeedsOperator, s.finish(ctx, o, stateNeedsOperator, needs.Error())
	case err != nil:
		return state, err
	}
	return refused, s.finish(ctx, o, refused, "")
}

// markPaid moves a pending order to paid and writes its "paid" message
// to the outbox, one commit: the message exists exactly when the order
// is paid, and a replay of the charge (state no longer pending) writes
// nothing.
func (s *service) markPaid(ctx context.Context, o order) error {
	body, err := json.Marshal(map[string]any{"event": "order.paid", "order": o.ID, "amount": o.Amount, "currency": o.Currency})
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE `+s.t.orders+` SET state = $2, updated = now() WHERE id = $1 AND state = $3`, o.ID, statePaid, statePending)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			if _, err := tx.Exec(ctx, `INSERT INTO `+s.t.outbox+` (message_id, order_id, body) VALUES ($1, $2, $3)`, "paid-"+o.ID, o.ID, body); err != nil {
				return err
			}
		}
		crashPoint("paid-before-commit")
		return nil
	})
	if err != nil {
		return fmt.Errorf("record order %s paid: %w", o.ID, err)
	}
	crashPoint("paid-after-commit")
	return nil
}

// finish records the order's final state (and why, for an operator).
func (s *service) finish(ctx context.Context, o order, state, problem string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE `+s.t.orders+` SET state = $2, problem = $3, updated = now() WHERE id = $1 AND state <> $2`, o.ID, state, problem)
		if err == nil {
			crashPoint("final-before-commit")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("record order %s %s: %w", o.ID, state, err)
	}
	crashPoint("final-after-commit")
	return nil
}

// loadOrder reads the order and its state.
func (s *service) loadOrder(ctx context.Context, id string) (order, string, error) {
	o := order{ID: id}
	var state string
	err := s.pool.QueryRow(ctx, `SELECT amount, currency, ship_to, state FROM `+s.t.orders+` WHERE id = $1`, id).
		Scan(&o.Amount, &o.Currency, &o.ShipTo, &state)
	if err != nil {
		return o, "", fmt.Errorf("load order %s: %w", id, err)
	}
	return o, state, nil
}
