package server

import (
	"context"
	"sync"
	"time"
)

// storeContext is the context one store call runs under: its parent's
// values and cancellation, ended at the store deadline. It is what
// context.WithTimeout gives, without what that costs on every request (a
// cancel context, a timer, four allocations, a timer-heap insertion and
// removal): the timer starts only if the store asks for Done. A store
// that only checks Err, such as MemoryStore, never starts one; a store
// that waits on the network (pgx, go-redis) asks for Done and gets a
// context.WithDeadline.
type storeContext struct {
	parent   context.Context
	deadline time.Time

	mu      sync.Mutex
	timed   context.Context // context.WithDeadline(parent, deadline), once Done was asked for
	cancel  context.CancelFunc
	stopped bool
}

// newStoreContext returns the context of a store call bounded by timeout.
// The caller must call stop once the store call returned.
func newStoreContext(parent context.Context, timeout time.Duration) *storeContext {
	return &storeContext{parent: parent, deadline: time.Now().Add(timeout)}
}

// Deadline implements context.Context.
func (c *storeContext) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done implements context.Context. The first call starts the deadline's
// timer.
func (c *storeContext) Done() <-chan struct{} {
	return c.timedContext().Done()
}

// timedContext returns the context.WithDeadline that stands for c once a
// store asked for Done, creating it.
func (c *storeContext) timedContext() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timed == nil {
		if c.stopped {
			c.timed, c.cancel = context.WithCancel(c.parent)
			c.cancel()
		} else {
			c.timed, c.cancel = context.WithDeadline(c.parent, c.deadline)
		}
	}
	return c.timed
}

// Err implements context.Context.
func (c *storeContext) Err() error {
	c.mu.Lock()
	timed, stopped := c.timed, c.stopped
	c.mu.Unlock()
	if timed != nil {
		return timed.Err()
	}
	if err := c.parent.Err(); err != nil {
		return err
	}
	if stopped {
		return context.Canceled
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value implements context.Context. Once Done was asked for, values come
// through the timed context, so context.Cause and the contexts derived
// from c see its cancellation.
func (c *storeContext) Value(key any) any {
	c.mu.Lock()
	timed := c.timed
	c.mu.Unlock()
	if timed != nil {
		return timed.Value(key)
	}
	return c.parent.Value(key)
}

// stop ends c, as a context.CancelFunc does, and stops its timer if it
// started one.
func (c *storeContext) stop() {
	c.mu.Lock()
	c.stopped = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
