package idem

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultRetryAfterCeiling caps the wait a server can ask for with
// Retry-After, so a misconfigured or hostile server cannot park a call for
// hours.
const DefaultRetryAfterCeiling = 60 * time.Second

// maxDeltaSeconds is the largest delta-seconds that fits in a Duration.
const maxDeltaSeconds = int64(1<<63-1) / int64(time.Second)

// ParseRetryAfter reads a Retry-After header value as of now (RFC 9110,
// section 10.2.3). It accepts delta-seconds (digits only; 0 is valid) and an
// HTTP-date in any of the three forms of http.ParseTime: IMF-fixdate,
// RFC 850 and asctime. A date in the past means no wait: 0. Surrounding
// spaces and tabs are ignored.
//
// ok is false for anything else: empty, negative, signed, fractional or
// garbage values. Callers should then ignore the header, as the protocol
// requires. Delta-seconds too large for a Duration give the largest
// Duration, for the caller's ceiling to cap. No ceiling is applied here.
func ParseRetryAfter(value string, now time.Time) (wait time.Duration, ok bool) {
	value = strings.Trim(value, " \t")
	if value == "" {
		return 0, false
	}
	if isDigits(value) {
		secs, err := strconv.ParseInt(value, 10, 64)
		if err != nil || secs > maxDeltaSeconds {
			// Digits too many for a Duration still ask for a wait: the
			// longest one, which the caller's ceiling then caps.
			return time.Duration(1<<63 - 1), true
		}
		return time.Duration(secs) * time.Second, true
	}
	date, err := http.ParseTime(value)
	if err != nil {
		return 0, false
	}
	// Sub saturates instead of overflowing for dates centuries away.
	return max(date.Sub(now), 0), true
}

// isDigits reports whether s is made of ASCII digits only.
func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// retryAfterHint reads resp's Retry-After header (resp may be nil) and caps
// it at ceiling; a ceiling <= 0 means DefaultRetryAfterCeiling. ok reports
// whether a usable hint was present; an unusable one is ignored.
func retryAfterHint(resp *http.Response, now time.Time, ceiling time.Duration) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	wait, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now)
	if !ok {
		return 0, false
	}
	if ceiling <= 0 {
		ceiling = DefaultRetryAfterCeiling
	}
	return min(wait, ceiling), true
}

// RetryWait is the wait idem's retry loop takes before retry n (0 for the
// first retry) given backoff b and the server's Retry-After hint: b(n)
// alone without a hint, and hint + b(n) with one. Adding the jitter on top
// of the hint, rather than waiting max(hint, b(n)), still never comes back
// earlier than the server asked, but spreads clients that were all told
// the same hint instead of sending them back in the same instant (see the
// herd table in BENCHMARKS.md). A nil b means idem's default FullJitter
// policy; a negative b(n) or hint counts as 0.
func RetryWait(b Backoff, n int, hint time.Duration, hasHint bool) time.Duration {
	if b == nil {
		b = FullJitter(DefaultBackoffBase, DefaultBackoffCap, nil)
	}
	wait := max(b(n), 0)
	if hasHint && hint > 0 {
		wait += hint
	}
	return wait
}

// nextWait returns RetryWait for retry n, checked against ctx.
//
// It never sleeps. If ctx is already done it returns ctx.Err(). If ctx has a
// deadline that the wait would reach, it returns ErrWaitBeyondDeadline
// together with the wait it computed, so the caller can give up at once
// with an error that carries the hint instead of sleeping into the
// deadline.
func nextWait(ctx context.Context, now time.Time, b Backoff, n int, hint time.Duration, hasHint bool) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	wait := RetryWait(b, n, hint, hasHint)
	if deadline, ok := ctx.Deadline(); ok && !now.Add(wait).Before(deadline) {
		return wait, ErrWaitBeyondDeadline
	}
	return wait, nil
}
