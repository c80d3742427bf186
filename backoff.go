package idem

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Defaults of idem's backoff policy.
const (
	// DefaultBackoffBase is the upper bound of the first retry's wait.
	DefaultBackoffBase = 100 * time.Millisecond
	// DefaultBackoffCap bounds every wait, however many retries came before.
	DefaultBackoffCap = 10 * time.Second
)

// Backoff returns the wait before retry number n (n = 0 for the first
// retry). A Backoff is a plain value: wrap one in another to compose
// policies, or write your own.
//
// Implementations should return a non-negative duration; idem treats a
// negative one as zero. A Backoff shared by concurrent calls must be safe
// for concurrent use; every constructor in this package returns one that is.
type Backoff func(n int) time.Duration

// FullJitter returns idem's default policy, the "full jitter" of the AWS
// architecture blog: the wait before retry n is drawn uniformly from
// [0, min(cap, base·2^n)). Spreading retries over the whole interval keeps
// clients that failed together from retrying together.
//
// rnd returns uniform values in [0, 1); values outside that range are
// clamped into it and NaN counts as 0. A nil rnd uses the top-level
// functions of math/rand/v2, which are safe for concurrent use and seeded
// from a cryptographic source. A non-nil rnd must itself be safe for
// concurrent use if the Backoff is shared.
//
// Bad bounds are clamped rather than rejected: base <= 0 means
// DefaultBackoffBase, cap <= 0 means DefaultBackoffCap, and a cap below base
// is raised to base. n < 0 counts as 0, and any n, however large, is safe:
// the bound saturates at cap instead of overflowing.
func FullJitter(base, cap time.Duration, rnd func() float64) Backoff {
	base, cap = clampBounds(base, cap)
	uniform := uniformSource(rnd)
	return func(n int) time.Duration {
		return scale(exponentialBound(base, cap, n), uniform())
	}
}

// Exponential returns the jitter-free policy min(cap, base·2^n), with the
// same clamping as FullJitter. It is deterministic, so clients that fail
// together retry together; use it for comparisons and tests, not in
// production.
func Exponential(base, cap time.Duration) Backoff {
	base, cap = clampBounds(base, cap)
	return func(n int) time.Duration {
		return exponentialBound(base, cap, n)
	}
}

// EqualJitter returns the "equal jitter" policy: half of min(cap, base·2^n)
// is always waited, the other half is drawn uniformly. It never retries at
// once, at the price of less spread than FullJitter. Clamping and rnd are
// as for FullJitter.
func EqualJitter(base, cap time.Duration, rnd func() float64) Backoff {
	base, cap = clampBounds(base, cap)
	uniform := uniformSource(rnd)
	return func(n int) time.Duration {
		bound := exponentialBound(base, cap, n)
		half := bound / 2
		return half + scale(bound-half, uniform())
	}
}

// DecorrelatedJitter returns the "decorrelated jitter" policy: each wait is
// drawn uniformly from [base, 3·previous wait), capped at cap, starting from
// previous = base. Clamping and rnd are as for FullJitter.
//
// Unlike the other policies it is stateful: the wait depends on the waits
// drawn before, not on n, except that n == 0 starts a new sequence. Give
// each call its own DecorrelatedJitter (the returned closure is safe for
// concurrent use, but calls sharing one interleave their sequences).
func DecorrelatedJitter(base, cap time.Duration, rnd func() float64) Backoff {
	base, cap = clampBounds(base, cap)
	uniform := uniformSource(rnd)
	var (
		mu   sync.Mutex
		prev = base
	)
	return func(n int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if n <= 0 {
			prev = base
		}
		// Float arithmetic: 3·prev may not fit in a Duration when cap is huge.
		upper := math.Min(3*float64(prev), float64(cap))
		wait := float64(base) + uniform()*(upper-float64(base))
		prev = durationFromFloat(wait, base, cap)
		return prev
	}
}

// clampBounds applies the clamping documented on FullJitter.
func clampBounds(base, cap time.Duration) (time.Duration, time.Duration) {
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if cap <= 0 {
		cap = DefaultBackoffCap
	}
	if cap < base {
		cap = base
	}
	return base, cap
}

// exponentialBound returns min(cap, base·2^n) without overflowing, for
// 0 < base <= cap.
func exponentialBound(base, cap time.Duration, n int) time.Duration {
	if n <= 0 {
		return base
	}
	// base·2^n <= cap exactly when base <= cap>>n; a shift of 63 or more
	// leaves 0, so large n saturate at cap.
	if n >= 63 || base > cap>>uint(n) {
		return cap
	}
	return base << uint(n)
}

// uniformSource returns rnd, or math/rand/v2's concurrency-safe generator
// when rnd is nil, clamped into [0, 1).
func uniformSource(rnd func() float64) func() float64 {
	if rnd == nil {
		return rand.Float64
	}
	return func() float64 {
		r := rnd()
		switch {
		case !(r > 0): // also NaN
			return 0
		case r >= 1:
			return math.Nextafter(1, 0)
		default:
			return r
		}
	}
}

// scale returns r·bound, kept inside [0, bound) despite float rounding
// (for bound > 0).
func scale(bound time.Duration, r float64) time.Duration {
	if bound <= 0 {
		return 0
	}
	d := time.Duration(r * float64(bound))
	if d >= bound {
		d = bound - 1
	}
	if d < 0 {
		d = 0
	}
	return d
}

// durationFromFloat converts f to a Duration within [lo, hi].
func durationFromFloat(f float64, lo, hi time.Duration) time.Duration {
	if !(f >= float64(lo)) { // also NaN
		return lo
	}
	if f >= float64(hi) {
		return hi
	}
	return time.Duration(f)
}
