package main

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// postgresOrders keeps orders in a table beside the keys, in the same
// database: each order is inserted in the transaction that completes its
// key (pgstore.Store.CompleteTx).
type postgresOrders struct {
	keys  *pgstore.Store
	table string
}

func newPostgresOrders(ctx context.Context, keys *pgstore.Store) (*postgresOrders, error) {
	table := pgx.Identifier{keys.Schema(), "example_orders"}.Sanitize()
	_, err := keys.Pool().Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		principal text NOT NULL, id text PRIMARY KEY, sku text NOT NULL,
		quantity integer NOT NULL, note text NOT NULL, created timestamptz NOT NULL DEFAULT now())`)
	if err != nil {
		return nil, err
	}
	return &postgresOrders{keys: keys, table: table}, nil
}

func (p *postgresOrders) create(ctx context.Context, principal string, o Order, c server.Completion) error {
	// The layer's store timeout (c.Timeout) bounds the transaction: a lock
	// on the orders table cannot hold the request.
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	return pgx.BeginFunc(ctx, p.keys.Pool(), func(tx pgx.Tx) error {
		// The completion first: it locks the key's row, so a retry that
		// took the lease over waits for this commit or fences it.
		if err := p.keys.CompleteTx(ctx, tx, c); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+p.table+` (principal, id, sku, quantity, note) VALUES ($1, $2, $3, $4, $5)`,
			principal, o.ID, o.SKU, o.Quantity, o.Note)
		return err
	})
}

func (p *postgresOrders) list(ctx context.Context, principal string) ([]Order, error) {
	rows, err := p.keys.Pool().Query(ctx, `SELECT id, sku, quantity, note FROM `+p.table+` WHERE principal = $1 ORDER BY created`, principal)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Order, error) {
		var o Order
		err := row.Scan(&o.ID, &o.SKU, &o.Quantity, &o.Note)
		return o, err
	})
}
