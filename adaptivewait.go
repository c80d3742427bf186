package idem

import (
	"context"
	"errors"
	"slices"
	"time"
)

// tokenWaiter is a retry of the Client waiting for a token of an
// AdaptiveBudget, first come first served.
type tokenWaiter struct {
	// handed is closed when a token has been handed to the waiter.
	handed chan struct{}
}

// wasHanded reports whether a token has been handed to w.
func (w *tokenWaiter) wasHanded() bool {
	select {
	case <-w.handed:
		return true
	default:
		return false
	}
}

// refuseAtOnce reports whether a retry asked for at now is refused
// before its backoff even starts: the bucket is empty and the server is
// down (nothing accepted over the last window, watched for the patience
// or more). The request is then counted as refused. Any other retry is
// decided by acquire, once its backoff has passed.
func (b *AdaptiveBudget) refuseAtOnce(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.advance(now)
	if b.tokens >= 1 || !b.down(now) {
		return false
	}
	s.requests++
	s.refused++
	return true
}

// down reports whether the last window saw attempts, no accepted one,
// over at least the patience. An empty window tells nothing. The caller
// holds b.mu.
func (b *AdaptiveBudget) down(now time.Time) bool {
	w := b.window(now)
	return w.accepts == 0 && !w.first.IsZero() && now.Sub(w.first) >= b.cfg.Patience
}

// acquire takes a token for a retry whose backoff has passed, waiting for
// one, behind the retries that waited first, when the bucket is empty: the
// closed-loop form of the overload rule (see AdaptiveBudget). It returns
// nil with the token, ErrBudgetExhausted when the budget refuses the
// retry (the server is down, the wait reached MaxDelay or ctx's deadline,
// or too many retries wait before a first accept), or ctx's error when
// ctx is cancelled first.
func (b *AdaptiveBudget) acquire(ctx context.Context, clock func() time.Time) error {
	b.mu.Lock()
	now := clock()
	start, realStart := now, time.Now()
	s := b.advance(now)
	s.requests++
	var me *tokenWaiter
	for {
		b.handOut(now)
		if me != nil && me.wasHanded() {
			b.mu.Unlock() // the floor's token, handed out just now
			return nil
		}
		if me == nil && len(b.waiters) == 0 && b.tokens >= 1 {
			b.tokens--
			s.retries++
			b.mu.Unlock()
			return nil
		}
		// The wait is bounded on the real clock too: a clock that stands
		// still (a test's) never ends the patience, but MaxDelay does.
		waited := max(now.Sub(start), time.Since(realStart))
		wake, refused := b.waitBound(ctx, now, waited, me)
		if refused {
			b.leave(me)
			b.advance(now).refused++
			b.mu.Unlock()
			return ErrBudgetExhausted
		}
		if me == nil {
			me = &tokenWaiter{handed: make(chan struct{})}
			b.waiters = append(b.waiters, me)
		}
		b.mu.Unlock()
		t := time.NewTimer(wake)
		var err error
		select {
		case <-me.handed:
		case <-t.C:
		case <-ctx.Done():
			err = ctx.Err()
		}
		t.Stop()
		b.mu.Lock()
		if me.wasHanded() { // a token came, whatever else happened
			b.mu.Unlock()
			return nil
		}
		if err != nil {
			b.leave(me)
			if errors.Is(err, context.DeadlineExceeded) {
				// No token came before the deadline: the budget's refusal,
				// as when the deadline is seen before the wait.
				b.advance(clock()).refused++
				err = ErrBudgetExhausted
			}
			b.mu.Unlock()
			return err
		}
		now = clock()
		s = b.advance(now)
	}
}

// waitBound is how long the retry me (nil: one about to join the queue),
// which has waited for waited, sleeps before it looks again, unless a
// token is handed to it first; or refused when it must give up now: the
// server is down, it has waited MaxDelay, ctx's deadline is reached, or
// it would join PatienceDebt retries already waiting for a first accept.
// The caller holds b.mu.
func (b *AdaptiveBudget) waitBound(ctx context.Context, now time.Time, waited time.Duration, me *tokenWaiter) (time.Duration, bool) {
	joining := me == nil
	w := b.window(now)
	var wake time.Duration
	if w.accepts == 0 {
		watched := time.Duration(0)
		if !w.first.IsZero() {
			watched = now.Sub(w.first)
		}
		if watched >= b.cfg.Patience || (joining && float64(len(b.waiters)+1) > b.cfg.PatienceDebt) {
			return 0, true
		}
		wake = b.cfg.Patience - watched // then judged down, unless an accept came
	} else {
		// Look again when the last accept leaves the window: with none
		// after it, the server is then down.
		wake = b.lastAccept.Add(b.cfg.Window).Sub(now)
	}
	if waited >= b.cfg.MaxDelay {
		return 0, true
	}
	wake = min(wake, b.cfg.MaxDelay-waited)
	if deadline, ok := ctx.Deadline(); ok {
		left := deadline.Sub(now)
		if left <= 0 {
			return 0, true
		}
		wake = min(wake, left)
	}
	head := len(b.waiters) == 0 || b.waiters[0] == me
	if head && b.cfg.MinPerSecond > 0 && b.tokens < 1 {
		// The floor's next token is the head's to take.
		wake = min(wake, time.Duration((1-b.tokens)/b.cfg.MinPerSecond*float64(time.Second))+time.Millisecond)
	}
	return max(wake, time.Millisecond), false
}

// handOut gives the bucket's whole tokens to the retries waiting longest.
// The caller holds b.mu.
func (b *AdaptiveBudget) handOut(now time.Time) {
	if len(b.waiters) == 0 {
		return
	}
	n := 0
	for n < len(b.waiters) && b.tokens >= 1 {
		b.tokens--
		close(b.waiters[n].handed)
		n++
	}
	if n == 0 {
		return
	}
	b.advance(now).retries += int64(n)
	b.waiters = slices.Delete(b.waiters, 0, n)
}

// leave takes w out of the queue (nil: nothing to do). The caller holds
// b.mu.
func (b *AdaptiveBudget) leave(w *tokenWaiter) {
	if w == nil {
		return
	}
	if i := slices.Index(b.waiters, w); i >= 0 {
		b.waiters = slices.Delete(b.waiters, i, i+1)
	}
}
