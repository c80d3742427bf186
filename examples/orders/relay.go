package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// relayBatch bounds the outbox rows one pass publishes.
const relayBatch = 50

// runRelay publishes the outbox's unsent rows to the broker every
// interval until ctx ends. A row is marked sent only after the broker
// confirmed it, with no transaction held across the publish: a crash in
// between publishes it again, under the same message id, which the
// consumer recognises (server.Once). At least once here, once in effect
// there.
func (s *service) runRelay(ctx context.Context, b *broker) {
	t := time.NewTicker(s.cfg.relayEvery)
	defer t.Stop()
	for {
		s.relayPass(ctx, b)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// relayPass is one pass of the relay; it returns how many rows it sent.
func (s *service) relayPass(ctx context.Context, b *broker) int {
	rows, err := s.pool.Query(ctx, `SELECT id, message_id, body FROM `+s.t.outbox+` WHERE sent IS NULL ORDER BY id LIMIT $1`, relayBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.logf("relay: read the outbox: %v", err)
		}
		return 0
	}
	type row struct {
		id        int64
		messageID string
		body      []byte
	}
	todo, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		return x, r.Scan(&x.id, &x.messageID, &x.body)
	})
	if err != nil {
		s.logf("relay: read the outbox: %v", err)
		return 0
	}
	sent := 0
	for _, x := range todo {
		crashPoint("publish-before")
		if err := b.publish(ctx, s.cfg.queue, x.messageID, x.body); err != nil {
			s.logf("relay: %v", err)
			return sent
		}
		crashPoint("publish-after")
		if _, err := s.pool.Exec(ctx, `UPDATE `+s.t.outbox+` SET sent = now() WHERE id = $1`, x.id); err != nil {
			s.logf("relay: mark %s sent: %v (it will be published again)", x.messageID, err)
			return sent
		}
		sent++
	}
	return sent
}
