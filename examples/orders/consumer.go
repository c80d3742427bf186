package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemkit/idem/server"
)

// runConsumer sends a receipt for every "paid" message, once per message
// id however often the broker delivers it: each delivery runs through
// server.Once on the keys' store, the receipt committed with the id's
// completion; the delivery is acked after that commit and requeued on a
// failure for now. It stops when ctx ends or the broker closes.
func (s *service) runConsumer(ctx context.Context, b *broker) error {
	deliveries, err := b.consume(s.cfg.queue)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case d, ok := <-deliveries:
			if !ok {
				return errors.New("the broker stopped delivering")
			}
			s.handleDelivery(ctx, d)
		}
	}
}

// paidMessage is the body the outbox relays.
type paidMessage struct {
	Event string `json:"event"`
	Order string `json:"order"`
}

func (s *service) handleDelivery(ctx context.Context, d amqp.Delivery) {
	var m paidMessage
	if err := json.Unmarshal(d.Body, &m); err != nil || m.Order == "" || d.MessageId == "" {
		s.logf("consumer: rejected %q: not a paid message with an id", d.MessageId)
		_ = d.Reject(false)
		return
	}
	scope := server.Scope{Principal: d.AppId, Method: "CONSUME", Route: s.cfg.queue}
	fingerprint := server.Fingerprint(scope.Method, scope.Route, d.Body)
	_, err := server.Once(ctx, s.keys, scope, d.MessageId, fingerprint, func(ctx context.Context) ([]byte, error) {
		return s.sendReceipt(ctx, d.MessageId, m.Order)
	}, server.WithLease(s.cfg.lease), server.WithStoreTimeout(s.cfg.storeTimeout))
	switch {
	case errors.Is(err, server.ErrKeyReused):
		s.logf("consumer: rejected %s: %v", d.MessageId, err)
		_ = d.Reject(false)
		return
	case err != nil:
		// Another consumer holds the id, or the store failed: nothing of
		// this delivery is committed, or what is will be recognised.
		s.logf("consumer: requeued %s: %v", d.MessageId, err)
		_ = sleep(ctx, 50*time.Millisecond)
		_ = d.Nack(false, true)
		return
	}
	crashPoint("consume-before-ack")
	_ = d.Ack(false)
}

// sendReceipt is the message's effect: the receipt row and the id's
// completion, one commit. It runs inside server.Once.
func (s *service) sendReceipt(ctx context.Context, messageID, orderID string) ([]byte, error) {
	held, ok := server.HeldFrom(ctx)
	if !ok {
		return nil, errors.New("sendReceipt runs inside server.Once")
	}
	result := fmt.Appendf(nil, `{"receipt_for":%q}`, orderID)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The completion first: it locks the id's row, so a redelivery
		// that took the lease over waits for this commit or is fenced.
		if err := s.keys.CompleteTx(ctx, tx, *held.Completion(server.Response{Status: 200, Body: result})); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t.receipts+` (message_id, order_id) VALUES ($1, $2)`, messageID, orderID); err != nil {
			return err
		}
		crashPoint("consume-before-commit")
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("receipt for %s: %w", orderID, err)
	}
	held.MarkCompleted()
	s.logf("consumer: receipt sent for %s", orderID)
	return result, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
