package frameworks

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// PGLedger records each effect as a row in PostgreSQL, committed in one
// transaction with the key's completion (pgstore's CompleteTx), so a
// crash keeps both or neither.
type PGLedger struct {
	Store *pgstore.Store
	Table string // schema-qualified, made by Create
}

// Create makes the effects table if it is missing.
func (l *PGLedger) Create(ctx context.Context) error {
	_, err := l.Store.Pool().Exec(ctx, `CREATE TABLE IF NOT EXISTS `+l.Table+` (key text NOT NULL, marker text NOT NULL)`)
	return err
}

// Record implements Ledger: the effect's row and the key's completion
// commit together, then the layer is told the key is complete.
func (l *PGLedger) Record(ctx context.Context, key, marker string, answer server.Response) error {
	held, ok := server.HeldFrom(ctx)
	if !ok {
		return errors.New("frameworks: PGLedger records only under the idempotency layer")
	}
	err := pgx.BeginFunc(ctx, l.Store.Pool(), func(tx pgx.Tx) error {
		if err := l.Store.CompleteTx(ctx, tx, *held.Completion(answer)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+l.Table+` (key, marker) VALUES ($1, $2)`, key, marker)
		return err
	})
	if err != nil {
		return fmt.Errorf("frameworks: record the payment: %w", err)
	}
	held.MarkCompleted()
	return nil
}

// Counts returns the number of effects of every key that has one.
func (l *PGLedger) Counts(ctx context.Context) (map[string]int, error) {
	rows, err := l.Store.Pool().Query(ctx, `SELECT key, count(*) FROM `+l.Table+` GROUP BY key`)
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int)
	var key string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&key, &n}, func() error {
		counts[key] = n
		return nil
	})
	return counts, err
}
