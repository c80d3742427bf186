package keystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// A committer folds concurrent writes into shared bbolt transactions, so
// that N writers arriving together pay one commit (one round of fdatasync)
// instead of N.
//
// It is a leader/follower scheme. A writer queues its op, then either
// takes the turn (a one-slot channel) or sees its op finished by someone
// else. The holder of the turn is the leader: it takes every queued op,
// runs them in one transaction, commits, reports to each op and hands the
// turn on. A writer that finds the turn free commits at once, so a lone
// write waits for nothing but its own commit; writers that arrive while a
// commit is running queue up and the next leader takes them all.
//
// bbolt's DB.Batch does the same folding but makes even a lone writer wait
// its MaxBatchDelay before committing; this does not.
type committer struct {
	db   *bolt.DB
	path string

	// turn holds a token while a leader runs a commit.
	turn chan struct{}

	mu    sync.Mutex
	queue []*writeOp // ops not yet taken by a leader

	// commits counts transactions committed, for tests and diagnostics.
	commits atomic.Int64

	// beginTx runs at the start of every batch transaction and committedTx
	// after one commits, in the leader, so the store can keep state that
	// follows the transaction (see Bolt's log index); either may be nil.
	beginTx, committedTx func()
}

// applyFunc runs one write inside a shared transaction. It reports whether
// it wrote anything. When it returns an error, what it wrote (if anything)
// is rolled back with the whole transaction, which then runs again without
// it, so one failing op never fails the others of its batch.
type applyFunc func(tx *bolt.Tx) (wrote bool, err error)

// writeOp is one queued write and, once done is closed, its outcome.
type writeOp struct {
	apply applyFunc
	// after, when set, is told the op's outcome once its commit is over:
	// a deferred op has no writer waiting on done.
	after func(err error)
	err   error
	done  chan struct{}
}

// Sentinels that steer a batch transaction out of bolt's Update.
var (
	errRerunBatch = errors.New("keystore: rerun batch without failed ops")
	errNoWrites   = errors.New("keystore: batch wrote nothing")
)

func newCommitter(db *bolt.DB, path string) *committer {
	return &committer{db: db, path: path, turn: make(chan struct{}, 1)}
}

// submit runs apply in a committed transaction and returns its outcome:
// when it returns nil, what apply wrote is durable (see Bolt). If ctx ends
// while the op is still queued, the op is withdrawn and ctx's error
// returned; once a leader has taken it, its true outcome is awaited and
// returned, so a committed op is never reported as failed.
func (c *committer) submit(ctx context.Context, apply applyFunc) error {
	op := &writeOp{apply: apply, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, op)
	c.mu.Unlock()

	select {
	case <-op.done:
		return op.err
	case c.turn <- struct{}{}:
		// Holding the turn, our op is either done already or still queued
		// (a leader finishes its batch before it hands the turn on), so
		// leading once finishes it.
		c.lead()
		<-c.turn
		<-op.done
		return op.err
	case <-ctx.Done():
		if c.withdraw(op) {
			return ctx.Err()
		}
		<-op.done
		return op.err
	}
}

// withdraw removes op from the queue and reports whether it was still
// there, i.e. no leader has taken it.
func (c *committer) withdraw(op *writeOp) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.queue, op)
	if i < 0 {
		return false
	}
	c.queue = slices.Delete(c.queue, i, i+1)
	return true
}

// lead commits everything queued in one transaction and reports to each op.
// The caller holds the turn.
func (c *committer) lead() {
	c.mu.Lock()
	batch := c.queue
	c.queue = nil
	c.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	c.commit(batch)
	for _, op := range batch {
		if op.after != nil {
			op.after(op.err)
		}
		close(op.done)
	}
}

// enqueue queues apply without waiting for it: the next leader commits it
// with its batch, then calls after with the outcome. Nothing is leading
// it on its own; flush does.
func (c *committer) enqueue(apply applyFunc, after func(error)) {
	op := &writeOp{apply: apply, after: after, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, op)
	c.mu.Unlock()
}

// flush commits whatever is queued, waiting for the turn if a leader holds
// it (that leader may already have taken the queue).
func (c *committer) flush() {
	c.turn <- struct{}{}
	c.lead()
	<-c.turn
}

// commit runs batch in one transaction, setting each op's err. An op that
// fails is dropped and the others run again in a fresh transaction; each
// round drops at least one op, so it ends. A failed commit fails every op
// that was in it.
func (c *committer) commit(batch []*writeOp) {
	pending := slices.Clone(batch)
	for len(pending) > 0 {
		var failed []*writeOp
		err := guard(c.path, func() error {
			return c.db.Update(func(tx *bolt.Tx) error {
				if c.beginTx != nil {
					c.beginTx()
				}
				failed = failed[:0]
				wrote := false
				for _, op := range pending {
					w, err := op.apply(tx)
					if err != nil {
						op.err = err
						failed = append(failed, op)
					}
					wrote = wrote || w
				}
				switch {
				case len(failed) > 0:
					return errRerunBatch
				case !wrote:
					return errNoWrites // nothing to make durable: roll back
				}
				return nil
			})
		})
		switch {
		case errors.Is(err, errRerunBatch):
			pending = slices.DeleteFunc(pending, func(op *writeOp) bool {
				return slices.Contains(failed, op)
			})
			continue
		case err == nil:
			c.commits.Add(1)
			if c.committedTx != nil {
				c.committedTx()
			}
		case errors.Is(err, errNoWrites):
		default:
			err = fmt.Errorf("keystore: commit to %s: %w", c.path, err)
			for _, op := range pending {
				op.err = err
			}
			return
		}
		for _, op := range pending {
			op.err = nil
		}
		return
	}
}
