package server

import (
	"context"
	"log/slog"
	"time"
)

// Defaults RunSweeper falls back to for a non-positive interval or batch.
const (
	DefaultSweepInterval = time.Minute
	DefaultSweepBatch    = 1000
)

// RunSweeper deletes the records Store.Sweep finds due (completed records
// past their retention, abandoned reservations): once at start, then
// every interval, in batches of batch (each batch is one short store
// call, so a large backlog never holds the store for long), until ctx
// ends. A store with a SweepWanted channel (MemoryStore) is also swept as
// soon as it signals it, when it refused a new key for want of room. A non-positive interval or batch takes the default. Errors are
// logged and the next round tries again; counts are logged at Debug. A
// nil logger is silent.
func RunSweeper(ctx context.Context, store Store, interval time.Duration, batch int, logger *slog.Logger) {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	if batch <= 0 {
		batch = DefaultSweepBatch
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	var wanted <-chan struct{} // nil, never ready, unless the store has one
	if w, ok := store.(sweepWanter); ok {
		wanted = w.SweepWanted()
	}
	for {
		sweepOnce(ctx, store, batch, logger)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-wanted:
		}
	}
}

// sweepWanter is a store that asks to be swept early.
type sweepWanter interface{ SweepWanted() <-chan struct{} }

// sweepOnce deletes batches until one comes back short, ctx ends or the
// store fails.
func sweepOnce(ctx context.Context, store Store, batch int, logger *slog.Logger) {
	total := 0
	for ctx.Err() == nil {
		n, err := store.Sweep(ctx, batch)
		total += n
		if err != nil {
			if ctx.Err() == nil {
				logger.Warn("idempotency sweep failed", "deleted", total, "err", err)
			}
			return
		}
		if n < batch {
			break
		}
	}
	logger.Debug("idempotency sweep done", "deleted", total)
}
