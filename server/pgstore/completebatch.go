package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/server"
)

// fencedState is the SQLSTATE the completion of CompleteBatch raises
// when its token owns nothing (division_by_zero, see completeOrAbort).
const fencedState = "22012"

// CompleteBatch completes c's reservation and runs effect, the
// handler's own statements, in one round trip and one transaction: the
// completion first, then effect's queued statements, sent as one pgx
// batch, which PostgreSQL runs as a single implicit transaction. Either
// all of it commits, with one durable commit, or none of it does. It is
// the compare-and-set of Complete: ErrFenced, with nothing written, when
// c's token no longer owns the key; any statement's error rolls the
// completion back with it and is returned. Use it when the effect's
// statements are known before they run; CompleteTx is for effects that
// read before they write. effect's statements must not control the
// transaction (no BEGIN, COMMIT or ROLLBACK); their callbacks
// (QueuedQuery.Exec and the like) run as the results come back.
//
// c.Timeout (Held.Completion sets the layer's store timeout) bounds the
// transaction: PostgreSQL gives up on a lock wait or a statement past it
// and rolls everything back, and CompleteBatch returns a
// *server.StoreTimeoutError (server.ErrStoreTimeout): answer 503 with
// Retry-After, and the layer releases the key.
//
//	b := &pgx.Batch{}
//	b.Queue(`INSERT INTO orders (id, sku) VALUES ($1, $2)`, id, sku)
//	if err := store.CompleteBatch(ctx, *held.Completion(resp), b); err != nil {
//		// ErrFenced: a newer request owns the key; nothing was written.
//	}
//	held.MarkCompleted()
func (s *Store) CompleteBatch(ctx context.Context, c server.Completion, effect *pgx.Batch) error {
	args, err := completionArgs(c)
	if err != nil {
		return fmt.Errorf("pgstore: complete: %w", err)
	}
	// The completion carries the transaction's bound (its last argument;
	// NULL for none), so the batch has no statement more
	// than the effect's and the completion.
	var bound *string
	if c.Timeout > 0 {
		setting := timeoutSetting(c.Timeout)
		bound = &setting
	}
	b := &pgx.Batch{}
	b.Queue(s.q.completeOrAbortBounded, append(args, bound)...)
	if effect != nil {
		b.QueuedQueries = append(b.QueuedQueries, effect.QueuedQueries...)
	}
	parent := ctx
	err, closeErr := s.sendBounded(ctx, c, b)
	err, closeErr = effectTimeout(parent, c, err), effectTimeout(parent, c, closeErr)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == fencedState:
		s.logger.Info("pgstore: stale owner fenced on complete", "key_hash", server.KeyHash(c.Reservation.Key))
		return server.ErrFenced
	case err != nil:
		return fmt.Errorf("pgstore: complete: %w", err)
	case closeErr != nil:
		return fmt.Errorf("pgstore: effect: %w", closeErr)
	}
	return nil
}
