package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/server"
)

// CompleteTx completes c's reservation inside tx, the caller's
// transaction, so the handler's effect and the key's answer commit
// together: after a crash both are there or neither is. It is the
// compare-and-set of Complete: ErrFenced (nothing written, roll back)
// when c's token no longer owns the key. Call it before the effect's own
// writes: it locks the key's row, so a retry that takes the lease over
// waits for this transaction or fences it. tx must be on this store's
// database. The caller commits; then it calls Held.MarkCompleted and
// answers c.Response.
//
// c.Timeout (Held.Completion sets the layer's store timeout) bounds the
// rest of tx on PostgreSQL's side: each later lock wait and statement
// gives up past it, and tx must then roll back. Begin tx under
// Held.Context, which ends after the same timeout, so the whole
// transaction is bounded; CompleteTx returns a *server.StoreTimeoutError
// (server.ErrStoreTimeout) when the bound ended it, and the handler
// answers 503 with Retry-After (the layer then releases the key):
//
//	held, _ := server.HeldFrom(r.Context())
//	resp := server.Response{Status: 201, Header: h, Body: body}
//	ctx, cancel := held.Context(r.Context())
//	defer cancel()
//	err := pgx.BeginFunc(ctx, store.Pool(), func(tx pgx.Tx) error {
//		if err := store.CompleteTx(ctx, tx, *held.Completion(resp)); err != nil {
//			return err
//		}
//		_, err := tx.Exec(ctx, `INSERT INTO orders ...`)
//		return err
//	})
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, c server.Completion) error {
	if c.Timeout > 0 {
		if _, err := tx.Exec(ctx, boundTransaction, timeoutSetting(c.Timeout)); err != nil {
			return fmt.Errorf("pgstore: complete: %w", effectTimeout(context.Background(), c, err))
		}
	}
	if err := s.complete(ctx, tx, c); err != nil {
		return fmt.Errorf("pgstore: complete: %w", effectTimeout(context.Background(), c, err))
	}
	return nil
}
