package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/saga"
)

// completeBatch bounds the orders one pass of the completer takes up.
const completeBatch = 20

// runCompleter finishes the orders whose request died or whose outcome
// was unknown when the handler answered: every interval it takes up to
// completeBatch orders that are still on the way and untouched for
// cfg.completeAfter, oldest first, and runs their saga again (advance):
// settled steps replay, the rest is sent with the keys it was born with.
// It stops when ctx ends. Orders that need an operator are reported on
// every pass, never dropped.
func (s *service) runCompleter(ctx context.Context) {
	t := time.NewTicker(s.cfg.completeEvery)
	defer t.Stop()
	for {
		s.completePass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// completePass is one pass of the completer; it returns how many orders
// it brought to a final state.
func (s *service) completePass(ctx context.Context) int {
	rows, err := s.pool.Query(ctx, `SELECT id, state FROM `+s.t.orders+`
		WHERE state IN ($1, $2, $3) AND updated < now() - make_interval(secs => $4)
		ORDER BY updated LIMIT $5`,
		statePending, statePaid, stateNeedsOperator, s.cfg.completeAfter.Seconds(), completeBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.logf("completer: list orders: %v", err)
		}
		return 0
	}
	type due struct{ id, state string }
	todo, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (due, error) {
		var d due
		return d, row.Scan(&d.id, &d.state)
	})
	if err != nil {
		s.logf("completer: list orders: %v", err)
		return 0
	}
	done := 0
	for _, d := range todo {
		if ctx.Err() != nil {
			return done
		}
		if d.state == stateNeedsOperator && s.awaitsOperator(ctx, d.id) {
			s.logf("completer: order %s needs an operator: see `idem runs show %s`", d.id, d.id)
			continue
		}
		state, err := s.advance(ctx, d.id)
		switch {
		case state == stateNeedsOperator:
			s.logf("completer: order %s needs an operator: see `idem runs show %s`", d.id, d.id)
		case err != nil:
			s.logf("completer: order %s is %s for now: %v", d.id, state, err)
		default:
			done++
			s.logf("completer: order %s %s", d.id, state)
		}
	}
	return done
}

// awaitsOperator says whether the order's run still waits for a person's
// verdict: until then a pass only reports it, and writes nothing.
func (s *service) awaitsOperator(ctx context.Context, id string) bool {
	run, err := s.saga.Resume(ctx, id)
	return err != nil || run.State() == saga.NeedsOperator
}
