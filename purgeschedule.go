package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idem/keystore"
)

// DefaultMemoryPurgeEvery is how often a Client whose keystore is a
// keystore.Memory purges it when WithPurgeEvery is not given: nothing
// else can reach a store in the process's memory, and without a purge it
// keeps every settled intent until the process ends.
const DefaultMemoryPurgeEvery = 10 * time.Minute

// WithPurgeEvery makes the Client purge its keystore every d, in the
// background, until Close: the settled intents (Succeeded, Failed) not
// updated for longer than the key retention (WithRetention, or the
// dialect's) are deleted, so the keystore holds the intents of the last
// retention and no more. Pending and Accepted intents are never purged,
// nor are those whose outcome is unknown (Expired ones, and Failed ones
// whose operation was gone): it is keystore.PurgeRequest with
// IncludeUnknown false, as `idem intents purge --older-than` the
// retention does; the intents of a saga run not yet finished are kept
// too, however old. Each purge is bounded by the store timeout
// (WithStoreTimeout); one that fails is logged, and the next tries again.
//
// 0 turns purging off. Default: off, except for a keystore.Memory (the
// store New makes without WithStore), which is purged every
// DefaultMemoryPurgeEvery. A keystore shared by a fleet needs one purger,
// not one per Client: give WithPurgeEvery to one of them, or run
// `idem intents purge` on a schedule.
func WithPurgeEvery(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("idem: WithPurgeEvery(%s): need a positive duration, or 0 for none", d)
		}
		c.purgeEvery, c.purgeEverySet = d, true
		return nil
	}
}

// purgeInterval is how often the Client purges its store; 0 for never.
func (c *config) purgeInterval() time.Duration {
	if c.purgeEverySet {
		return c.purgeEvery
	}
	if _, ok := c.store.(*keystore.Memory); ok {
		return DefaultMemoryPurgeEvery
	}
	return 0
}

// purger runs the Client's scheduled purges.
type purger struct {
	// ctx ends at Close (stop), and with it the loop and the purge it
	// runs; done is closed when the loop has returned.
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}
}

// startPurging starts the purge loop when the Client purges its store.
func (c *Client) startPurging() {
	every := c.cfg.purgeInterval()
	if every <= 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	p := &purger{ctx: ctx, stop: stop, done: make(chan struct{})}
	c.purger = p
	go func() {
		defer close(p.done)
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
			_, _ = c.purgeNow()
		}
	}()
}

// stopPurging ends the purge loop and waits for it, at most the write
// grace: a store whose purge ignores its context is closed under it.
func (c *Client) stopPurging() {
	p := c.purger
	if p == nil {
		return
	}
	p.stop()
	timer := time.NewTimer(c.cfg.writeGrace)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		c.log.Warn("idem: the scheduled purge did not stop within the write grace; closing the keystore under it")
	}
}

// purgeNow runs one scheduled purge: the settled intents whose retention
// has passed, by the Client's clock, within the store timeout and until
// Close. Its result is logged, a failure as a warning.
func (c *Client) purgeNow() (keystore.PurgeResult, error) {
	base := context.Background()
	if c.purger != nil {
		base = c.purger.ctx
	}
	ctx, cancel := context.WithTimeout(base, c.cfg.storeTimeout)
	defer cancel()
	cutoff, err := c.heldBackByRuns(ctx, c.cfg.now().Add(-c.cfg.retention))
	if err != nil {
		c.log.Warn("idem: scheduled purge skipped: the keystore's saga runs could not be read; the next one tries again", "err", err)
		return keystore.PurgeResult{}, err
	}
	res, err := c.store.Purge(ctx, keystore.PurgeRequest{OlderThan: cutoff, KeepNamesAfter: cutoff})
	var damaged *keystore.CorruptRecordsError
	switch {
	case err == nil:
		if res.Deleted+res.Tombstoned > 0 {
			c.log.Debug("idem: scheduled purge", "deleted", res.Deleted, "tombstoned", res.Tombstoned)
		}
	case errors.As(err, &damaged):
		c.log.Warn("idem: scheduled purge passed over damaged records; run `idem intents list` to name them",
			"deleted", res.Deleted, "tombstoned", res.Tombstoned, "err", err)
	case errors.Is(err, keystore.ErrClosed):
		// Close came first.
	default:
		c.log.Warn("idem: scheduled purge failed; the next one tries again",
			"deleted", res.Deleted, "tombstoned", res.Tombstoned, "err", err)
	}
	return res, err
}

// runClockSkew is how far ahead of the Client's clock the store's clock,
// which times a run, may be: a step begun just after its run is still
// held back with it.
const runClockSkew = 5 * time.Minute

// finishedRunStates are the states of a saga run (package saga:
// Completed, Compensated) that need none of its steps' intents again.
var finishedRunStates = map[string]bool{"completed": true, "compensated": true}

// heldBackByRuns is cutoff, or the creation of the oldest saga run the
// keystore keeps (keystore.RunKeeper) that is not finished, when earlier:
// such a run reads its steps' intents again to settle or undo them, and
// one it found purged would pass for a step never sent. Every step's
// intent is created after its run, so none is purged while the run is
// open; a run left open holds the purge back, and says so.
func (c *Client) heldBackByRuns(ctx context.Context, cutoff time.Time) (time.Time, error) {
	rk, ok := c.store.(keystore.RunKeeper)
	if !ok {
		return cutoff, nil
	}
	runs, err := rk.ListRuns(ctx)
	var damaged *keystore.CorruptRecordsError
	if err != nil && !errors.As(err, &damaged) {
		return cutoff, err
	}
	if damaged != nil {
		// A damaged run may be open: purge nothing of what it may need.
		return cutoff, fmt.Errorf("idem: a damaged saga run may still need its steps: %w", damaged)
	}
	held := cutoff
	for _, r := range runs {
		if since := r.CreatedAt.Add(-runClockSkew); !finishedRunStates[r.State] && since.Before(held) {
			held = since
		}
	}
	if held.Before(cutoff) {
		c.log.Warn("idem: an unfinished saga run holds the scheduled purge back to its creation", "since", held)
	}
	return held, nil
}
