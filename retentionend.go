package idem

import (
	"context"
	"fmt"
	"time"
)

// retentionReachedError stops a call before an attempt whose worst case
// (its timeout, or the context's deadline, plus the wait before it) would
// end after the key retention: the server may have forgotten the key by
// the time it reads the attempt, and would execute it again. It matches
// ErrKeyExpired.
type retentionReachedError struct {
	// left is the retention remaining when the attempt was due; worst is
	// the attempt's worst case.
	left, worst time.Duration
}

func (e *retentionReachedError) Error() string {
	return fmt.Sprintf("idem: the key retention ends in %s, within the next attempt's worst case (%s): the server may have forgotten the key by then; not resent, reconcile it",
		e.left.Round(time.Millisecond), e.worst.Round(time.Millisecond))
}

func (e *retentionReachedError) Unwrap() error { return ErrKeyExpired }

// attemptBound is the longest one attempt of cl may take: the HTTP
// client's timeout, or what is left of ctx's deadline when that is
// sooner (or there is no timeout); DefaultAttemptTimeout when neither
// bounds it.
func attemptBound(ctx context.Context, cl *call, now time.Time) time.Duration {
	bound := cl.client.Timeout
	if d, ok := ctx.Deadline(); ok {
		if left := d.Sub(now); bound <= 0 || left < bound {
			bound = max(left, 0)
		}
	}
	if bound <= 0 {
		bound = DefaultAttemptTimeout
	}
	return bound
}

// withinRetention checks that an attempt of cl starting after wait from
// now ends, at worst, before the key retention ends (cl.retentionEnd; a
// zero end, for calls that carry no intent's key, is never reached).
func withinRetention(ctx context.Context, cl *call, now time.Time, wait time.Duration) error {
	if cl.retentionEnd.IsZero() {
		return nil
	}
	worst := wait + attemptBound(ctx, cl, now)
	if left := cl.retentionEnd.Sub(now); left < worst {
		return &retentionReachedError{left: left, worst: worst}
	}
	return nil
}
