package idem

import (
	"context"
	"time"
)

// RetryBudget decides, for all the calls of one Client together, whether
// a failed attempt may be retried, and when. The Client consults it after
// every attempt: Accepted for one that succeeded, AllowRetry for one it is
// about to retry. Implementations must be safe for concurrent use; both
// *Budget (a fixed token bucket) and *AdaptiveBudget (the default) are.
type RetryBudget interface {
	// AllowRetry is asked at now, before a retry that the backoff (and
	// any Retry-After) would start after wait. It returns the wait to use,
	// never shorter than wait, or false to refuse the retry. limit, when
	// positive, is the time left before the call's deadline: a wait of
	// limit or more must be refused, as the retry could not be made.
	AllowRetry(now time.Time, wait, limit time.Duration) (time.Duration, bool)
	// Accepted records that an attempt succeeded at now.
	Accepted(now time.Time)
}

// AllowRetry makes a Budget a RetryBudget: it grants a retry when the
// bucket pays for it (TryRetry) and never changes the wait.
func (b *Budget) AllowRetry(_ time.Time, wait, _ time.Duration) (time.Duration, bool) {
	return wait, b.TryRetry()
}

// Accepted makes a Budget a RetryBudget: it refills the bucket (Success).
func (b *Budget) Accepted(time.Time) { b.Success() }

// budgetAccepted tells b of a success; a nil budget is unlimited.
func budgetAccepted(b RetryBudget, now time.Time) {
	if b != nil {
		b.Accepted(now)
	}
}

// budgetRetry asks b, as an attempt fails, for a retry after wait within
// ctx's deadline, and returns the wait to use, or ErrBudgetExhausted. A
// nil budget grants every retry as it is. An *AdaptiveBudget is only
// asked here whether the server is down (see refuseAtOnce); its token is
// taken by budgetAcquire, once the wait has passed.
func budgetRetry(ctx context.Context, b RetryBudget, now time.Time, wait time.Duration) (time.Duration, error) {
	switch ab := b.(type) {
	case nil:
		return wait, nil
	case *AdaptiveBudget:
		if ab == nil {
			return wait, nil
		}
		if ab.refuseAtOnce(now) {
			return 0, ErrBudgetExhausted
		}
		return wait, nil
	}
	if got, ok := b.AllowRetry(now, wait, deadlineLimit(ctx, now)); ok {
		return got, nil
	}
	return 0, ErrBudgetExhausted
}

// budgetAcquire is the second half of an *AdaptiveBudget's decision,
// made just before the retry is sent: it takes the retry's token, waiting
// for one when the bucket is empty (see AdaptiveBudget). It returns nil,
// ErrBudgetExhausted, or ctx's error. Other budgets decided in
// budgetRetry.
func budgetAcquire(ctx context.Context, b RetryBudget, clock func() time.Time) error {
	if ab, ok := b.(*AdaptiveBudget); ok && ab != nil {
		return ab.acquire(ctx, clock)
	}
	return nil
}

// deadlineLimit is the time left before ctx's deadline at now, for a
// budget's limit: 0 for none. nextWait already refused a wait reaching
// the deadline, so it is positive when there is one.
func deadlineLimit(ctx context.Context, now time.Time) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return max(deadline.Sub(now), time.Nanosecond)
	}
	return 0
}

// Budget returns the client's retry budget (nil when unlimited), for
// metrics: the default is an *AdaptiveBudget, whose State shows it.
func (c *Client) Budget() RetryBudget { return c.cfg.budget }
