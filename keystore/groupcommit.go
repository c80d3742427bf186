package keystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// want, when not 0, is the queue length a leader gathering a batch
	// waits for; the writer that brings the queue there closes grown.
	want  int
	grown chan struct{}

	// peakBatch is the largest batch of the recent commits (it decays by
	// an eighth a commit) and lastCommit how long the last commit took;
	// only the leader touches them.
	peakBatch  int
	lastCommit time.Duration
	// maxGather caps a gathering leader's wait (gatherMaxWait; tests that
	// must not depend on the scheduler lengthen it).
	maxGather time.Duration

	// commits counts transactions committed, for tests and diagnostics.
	commits atomic.Int64

	// beginTx runs at the start of every batch transaction and committedTx
	// after one commits, in the leader, so the store can keep state that
	// follows the transaction (see Bolt's log index); either may be nil.
	beginTx, committedTx func()

	// refuse, when set, says why no write may start (no system call);
	// verify runs after each commit, before its writers are told (see
	// fileWatch). Either may be nil.
	refuse, verify func() error
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
	return &committer{db: db, path: path, turn: make(chan struct{}, 1), maxGather: gatherMaxWait}
}

// submit runs apply in a committed transaction and returns its outcome:
// when it returns nil, what apply wrote is durable (see Bolt). If ctx ends
// while the op is still queued, the op is withdrawn and ctx's error
// returned; once a leader has taken it, its true outcome is awaited and
// returned, so a committed op is never reported as failed.
func (c *committer) submit(ctx context.Context, apply applyFunc) error {
	if c.refuse != nil {
		if err := c.refuse(); err != nil {
			return err
		}
	}
	op := &writeOp{apply: apply, done: make(chan struct{})}
	c.push(op)

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
	filled := c.gather()
	c.mu.Lock()
	batch := c.queue
	c.queue = nil
	c.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	start := time.Now()
	c.commit(batch)
	c.lastCommit = time.Since(start)
	c.peakBatch = max(len(batch), c.peakBatch-c.peakBatch/8)
	if !filled {
		c.peakBatch = len(batch) // the writers did not come back: expect no more than came
	}
	for _, op := range batch {
		if op.after != nil {
			op.after(op.err)
		}
		close(op.done)
	}
}

// Gathering: writers that share commits come back together, each once
// its last commit is over, but not at once: each has its own work to do
// before its next write (on a busy CPU, for a while). A leader that takes
// the turn just after a big commit finds only the first few back, and
// committing them alone costs a whole commit (a round of fdatasyncs) for
// a few records, while the rest queue up for the next one: commits
// alternate between full and nearly empty. So a leader that finds the
// queue well short of the recent batches waits for it to fill up to
// gatherShare quarters of the largest of them, at most as long as the
// last commit took (and gatherMaxWait): its own writer waits longer, by at
// most one commit, and the commit carries the batch it would otherwise
// have split in two. The largest recent batch, not the last, is the
// target, else each shortened batch would lower the next target; it
// decays by an eighth a commit, and a wait that runs out sets it to the
// batch that did gather, so a writer left alone after a burst waits once,
// and a lone writer (batches below gatherMinBatch) never waits.
const (
	gatherMinBatch = 4
	gatherShare    = 3
	gatherMaxWait  = 2 * time.Millisecond
)

// gather waits, before a leader takes the queue, for the writers of the
// recent batches to come back (see Gathering), and reports false when
// they did not within the wait. The caller holds the turn.
func (c *committer) gather() bool {
	if c.peakBatch < gatherMinBatch {
		return true
	}
	target := c.peakBatch * gatherShare / 4
	c.mu.Lock()
	if n := len(c.queue); n == 0 || n >= target {
		c.mu.Unlock()
		return true
	}
	grown := make(chan struct{})
	c.want, c.grown = target, grown
	c.mu.Unlock()
	t := time.NewTimer(min(c.lastCommit, c.maxGather))
	filled := true
	select {
	case <-grown:
	case <-t.C:
		filled = false
	}
	t.Stop()
	c.mu.Lock()
	if c.grown == grown {
		c.want, c.grown = 0, nil
	}
	c.mu.Unlock()
	return filled
}

// enqueue queues apply without waiting for it: the next leader commits it
// with its batch, then calls after with the outcome. Nothing is leading
// it on its own; flush does.
func (c *committer) enqueue(apply applyFunc, after func(error)) {
	c.push(&writeOp{apply: apply, after: after, done: make(chan struct{})})
}

// push queues op, and tells a gathering leader once the queue is as long
// as it waits for.
func (c *committer) push(op *writeOp) {
	c.mu.Lock()
	c.queue = append(c.queue, op)
	if c.want > 0 && len(c.queue) >= c.want {
		close(c.grown)
		c.want, c.grown = 0, nil
	}
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
	if c.refuse != nil {
		if err := c.refuse(); err != nil {
			for _, op := range pending {
				op.err = err
			}
			return
		}
	}
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
			if c.verify != nil {
				if verr := c.verify(); verr != nil {
					for _, op := range pending {
						op.err = verr
					}
					return
				}
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
