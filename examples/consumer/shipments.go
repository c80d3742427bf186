package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// order is the message body.
type order struct {
	OrderID  string `json:"order_id"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// parseOrder reads a message body, refusing one no redelivery can fix.
func parseOrder(body []byte) (order, error) {
	var o order
	if err := json.Unmarshal(body, &o); err != nil {
		return order{}, fmt.Errorf("the body is not an order: %w", err)
	}
	if o.OrderID == "" || o.SKU == "" || o.Quantity < 1 {
		return order{}, errors.New("an order needs order_id, sku and a quantity of at least 1")
	}
	return o, nil
}

// shipments is the effect: a table beside the keys, in the same
// database. It has no unique constraint on the message id on purpose:
// exactly one row per message is server.Once's doing, and the tests
// count rows to prove it.
type shipments struct {
	keys  *pgstore.Store
	table string
}

func newShipments(ctx context.Context, keys *pgstore.Store) (*shipments, error) {
	table := pgx.Identifier{keys.Schema(), "shipments"}.Sanitize()
	_, err := keys.Pool().Exec(ctx, `CREATE TABLE IF NOT EXISTS `+table+` (
		id bigserial PRIMARY KEY, message_id text NOT NULL, order_id text NOT NULL,
		sku text NOT NULL, quantity integer NOT NULL, shipped timestamptz NOT NULL DEFAULT now())`)
	if err != nil {
		return nil, fmt.Errorf("create the shipments table: %w", err)
	}
	return &shipments{keys: keys, table: table}, nil
}

// shipmentResult is what a message's completion stores and a redelivery
// gets back.
type shipmentResult struct {
	Shipment int64 `json:"shipment"`
}

// ship inserts the shipment and completes the message id in one
// transaction, held open hold first (a slow effect). It runs inside
// server.Once, whose reservation ctx carries.
func (s *shipments) ship(ctx context.Context, messageID string, o order, hold time.Duration) ([]byte, error) {
	held, ok := server.HeldFrom(ctx)
	if !ok {
		return nil, errors.New("ship runs inside server.Once")
	}
	var result []byte
	err := pgx.BeginFunc(ctx, s.keys.Pool(), func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id'))`, s.table).Scan(&id); err != nil {
			return err
		}
		var err error
		if result, err = json.Marshal(shipmentResult{Shipment: id}); err != nil {
			return err
		}
		// The completion first: it locks the id's row, so a redelivery
		// that took the lease over waits for this commit or fences it.
		if err := s.keys.CompleteTx(ctx, tx, *held.Completion(server.Response{Status: 200, Body: result})); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.table+` (id, message_id, order_id, sku, quantity) VALUES ($1, $2, $3, $4, $5)`,
			id, messageID, o.OrderID, o.SKU, o.Quantity); err != nil {
			return err
		}
		return sleep(ctx, hold)
	})
	if err != nil {
		return nil, fmt.Errorf("ship %s: %w", messageID, err)
	}
	held.MarkCompleted()
	return result, nil
}

// count returns how many shipments there are.
func (s *shipments) count(ctx context.Context) (int, error) {
	var n int
	err := s.keys.Pool().QueryRow(ctx, `SELECT count(*) FROM `+s.table).Scan(&n)
	return n, err
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
