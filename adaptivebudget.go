package idem

import (
	"math"
	"sync"
	"time"
)

// Defaults of the adaptive retry budget, the Client's default.
const (
	// DefaultAdaptiveCapacity is the most tokens the bucket holds, and
	// what it starts with: the retries granted before anything is known.
	DefaultAdaptiveCapacity = 100
	// DefaultAdaptiveRatio is the tokens each accepted attempt brings:
	// one retry per success, so that requests stay within twice the
	// accepts (Google SRE's K = 2).
	DefaultAdaptiveRatio = 1
	// DefaultAdaptiveMinPerSecond is the floor of the refill, in tokens
	// per second whatever the server answers (Finagle's minRetriesPerSec).
	DefaultAdaptiveMinPerSecond = 10
	// DefaultAdaptiveWindow is how far back requests and accepts count.
	DefaultAdaptiveWindow = time.Second
	// DefaultAdaptiveMaxDelay is the longest a retry waits for the token
	// that coming accepts will bring.
	DefaultAdaptiveMaxDelay = 10 * time.Second
	// DefaultAdaptivePatience is how long failures without any accept are
	// taken for a server whose successes are still on their way (a
	// rejection comes back faster than a success), not for one that is
	// down.
	DefaultAdaptivePatience = 500 * time.Millisecond
	// DefaultAdaptivePatienceDebt is the most retries that wait for a
	// first accept (the most the bucket may owe then, to AllowRetry), as
	// a multiple of the capacity: a herd's first rejections take the
	// capacity's tokens, and the retries those tokens paid for may be
	// rejected again, and wait, before the herd's first success comes
	// back.
	DefaultAdaptivePatienceDebt = 1.5
)

// AdaptiveBudgetConfig sets an AdaptiveBudget (its godoc gives the
// rule). A zero field takes its default (the DefaultAdaptive constants);
// a negative one means none: no tokens, no refill, no deferred retries,
// or no patience.
type AdaptiveBudgetConfig struct {
	// Capacity is C, the most tokens, and the tokens at the start.
	Capacity float64
	// Ratio is r, the tokens each accepted attempt brings.
	Ratio float64
	// MinPerSecond is m, the tokens added every second regardless.
	MinPerSecond float64
	// Window is W, how far back requests and accepts count.
	Window time.Duration
	// MaxDelay is D, the longest a retry waits (or is deferred) for a
	// token.
	MaxDelay time.Duration
	// Patience is P, how long failures without accepts are not yet
	// taken for a server that is down.
	Patience time.Duration
	// PatienceDebt is B, the most retries that wait for a first accept
	// (the most the bucket may owe then, to AllowRetry); zero means
	// DefaultAdaptivePatienceDebt times Capacity.
	PatienceDebt float64
}

// AdaptiveBudget is the Client's default retry budget. It tells an
// overloaded server (some requests still succeed) from a server that is
// down (none do), for one Client shared by any number of goroutines, and
// paces retries in the first case instead of refusing them.
//
// The rule, with capacity C, ratio r, floor m, window W, max delay D,
// patience P and patience debt B (1.5 C by default), as the Client
// applies it:
//
//   - A token bucket of at most C tokens, full at the start. Each accepted
//     attempt adds r tokens (gRPC retry throttling's token_ratio), and m
//     tokens are added every second whatever happens (Finagle's
//     minRetriesPerSec). Each retry costs one token, taken when its
//     backoff has passed, just before it is sent.
//   - Down: when an attempt fails, the bucket is empty and the last W saw
//     no accepted attempt, over at least P, the retry is refused at once.
//     An outage thus costs at most one attempt per call beyond C, plus m
//     retries per second.
//   - A retry that finds a token, with no other retry waiting, goes.
//   - Otherwise it waits for a token, first come first served: each
//     accept hands its r tokens to the retries waiting longest, and the
//     floor its m a second. Retries thus reach an overloaded server at the
//     rate it accepts them, each one as an earlier request leaves (the
//     accepts clock the retries, as acknowledgements clock TCP's
//     segments), so a herd drains at the server's pace with no caller
//     starved and few retries rejected again, and in the long run retries
//     stay within r per success plus m per second (Finagle's percentage
//     and floor; r = 1 keeps requests within twice the accepts, Google
//     SRE's K = 2). A waiting retry is refused when it has waited D, at
//     its call's deadline, or when the server turns out down (the last W
//     then saw no accept, over at least P).
//   - Too early to tell: a rejection comes back faster than a success, so
//     a herd's first failures arrive before its first successes. A retry
//     that waits while nothing has been accepted yet is held until the
//     first accept, or refused when P passes without one: the retries of
//     an outage are never sent. At most B retries wait so; one more is
//     refused. B exceeds C by half: a retry granted from the full bucket
//     at once can be rejected again, and wait, before the first success
//     comes back (sooner still on a starved CPU), so a herd of 2C callers
//     released at once is not refused for a slow first success.
//
// AllowRetry, the RetryBudget method for callers other than the Client,
// cannot wait for tokens: it decides at once, with the same bucket and
// window. A retry without a token is refused when the server is down; in
// overload it borrows the token, the bucket going below zero, and is
// deferred until the refill should repay the debt, debt / (r·a + m), a
// being the accepted attempts per second over the last W (refused beyond
// D or the deadline); too early to tell, it borrows and is deferred by
// what is left of P, as long as the bucket owes no more than B.
//
// A nil *AdaptiveBudget is unlimited. State shows the bucket, the
// waiting retries and the window, for metrics.
type AdaptiveBudget struct {
	mu       sync.Mutex
	cfg      AdaptiveBudgetConfig
	sliceLen time.Duration
	tokens   float64
	epoch    time.Time // the first event; zero before it
	refilled time.Time // when the floor last added tokens
	// lastAccept is the latest accepted attempt; zero before any.
	lastAccept time.Time
	// waiters are the Client's retries waiting for a token, oldest
	// first (adaptivewait.go).
	waiters []*tokenWaiter
	slices  [budgetSlices]budgetSlice
}

// budgetSlices is how many slices the window is cut into: counts expire a
// tenth of the window at a time.
const budgetSlices = 10

// budgetSlice counts the events of one tenth of the window.
type budgetSlice struct {
	index                               int64     // slice number since the epoch
	first                               time.Time // its first event
	requests, accepts, retries, refused int64
}

// NewAdaptiveBudget returns a full AdaptiveBudget set by cfg (see
// AdaptiveBudgetConfig for zero and negative fields).
func NewAdaptiveBudget(cfg AdaptiveBudgetConfig) *AdaptiveBudget {
	cfg.Capacity = orDefault(cfg.Capacity, DefaultAdaptiveCapacity)
	cfg.Ratio = orDefault(cfg.Ratio, DefaultAdaptiveRatio)
	cfg.MinPerSecond = orDefault(cfg.MinPerSecond, DefaultAdaptiveMinPerSecond)
	cfg.Capacity = min(cfg.Capacity, maxBudgetTokens)
	if cfg.Window <= 0 {
		cfg.Window = DefaultAdaptiveWindow
	}
	cfg.MaxDelay = durationOrDefault(cfg.MaxDelay, DefaultAdaptiveMaxDelay)
	cfg.Patience = durationOrDefault(cfg.Patience, DefaultAdaptivePatience)
	cfg.PatienceDebt = min(orDefault(cfg.PatienceDebt, DefaultAdaptivePatienceDebt*cfg.Capacity), maxBudgetTokens)
	return &AdaptiveBudget{
		cfg:      cfg,
		sliceLen: max(cfg.Window/budgetSlices, 1),
		tokens:   cfg.Capacity,
	}
}

// orDefault is v, or def for 0, or 0 for a negative v or NaN.
func orDefault(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case !(v > 0):
		return 0
	}
	return v
}

// durationOrDefault is d, or def for 0, or 0 for a negative d.
func durationOrDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// AllowRetry implements RetryBudget with the rule of AdaptiveBudget for
// callers that cannot wait for a token (see its last paragraph).
func (b *AdaptiveBudget) AllowRetry(now time.Time, wait, limit time.Duration) (time.Duration, bool) {
	if b == nil {
		return wait, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.advance(now)
	s.requests++
	if b.tokens >= 1 {
		b.tokens--
		s.retries++
		return wait, true
	}
	w := b.window(now)
	if w.accepts == 0 {
		watched := now.Sub(w.first)
		if watched >= b.cfg.Patience || b.tokens-1 < -b.cfg.PatienceDebt ||
			(limit > 0 && wait+b.cfg.Patience-watched >= limit) {
			s.refused++ // down
			return 0, false
		}
		// Too early to tell: the retry goes once the evidence is in,
		// still spread by its backoff.
		b.tokens--
		s.retries++
		return wait + b.cfg.Patience - watched, true
	}
	rate := b.cfg.MinPerSecond + b.cfg.Ratio*w.acceptRate(now)
	if rate <= 0 {
		s.refused++ // nothing would ever repay the debt
		return 0, false
	}
	need := time.Duration(math.Min((1-b.tokens)/rate, math.MaxInt64/2/float64(time.Second)) * float64(time.Second))
	wait = max(wait, need)
	if need > b.cfg.MaxDelay || (limit > 0 && wait >= limit) {
		s.refused++
		return 0, false
	}
	b.tokens--
	s.retries++
	return wait, true
}

// Accepted implements RetryBudget: it adds the ratio's tokens.
func (b *AdaptiveBudget) Accepted(now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.advance(now)
	s.requests++
	s.accepts++
	if now.After(b.lastAccept) {
		b.lastAccept = now
	}
	// Waiting retries take the accept's tokens before the cap applies:
	// even a bucket of capacity zero passes them on.
	b.tokens += b.cfg.Ratio
	b.handOut(now)
	b.tokens = min(b.tokens, b.cfg.Capacity)
}

// advance adds the floor's tokens up to now and returns now's slice,
// emptied if it held an older period.
func (b *AdaptiveBudget) advance(now time.Time) *budgetSlice {
	if b.epoch.IsZero() {
		b.epoch, b.refilled = now, now
	}
	if dt := now.Sub(b.refilled); dt > 0 {
		b.tokens = min(b.tokens+b.cfg.MinPerSecond*dt.Seconds(), b.floorCap())
		b.refilled = now
	}
	idx := b.sliceIndex(now)
	s := &b.slices[idx%budgetSlices]
	if s.index != idx || s.first.IsZero() {
		*s = budgetSlice{index: idx, first: now}
	}
	return s
}

// floorCap is the most the floor fills the bucket to: its capacity, or
// one token while retries wait for it, so that even a bucket of capacity
// zero funds its floor's retries. The caller holds b.mu.
func (b *AdaptiveBudget) floorCap() float64 {
	if len(b.waiters) > 0 {
		return max(b.cfg.Capacity, 1)
	}
	return b.cfg.Capacity
}

// sliceIndex is the number of the slice now falls in; a clock that went
// back before the epoch counts as the epoch.
func (b *AdaptiveBudget) sliceIndex(now time.Time) int64 {
	return int64(max(now.Sub(b.epoch), 0) / b.sliceLen)
}

// windowStats sums the slices of the last window, and of its last two
// slices (recent).
type windowStats struct {
	requests, accepts, retries, refused int64
	first                               time.Time // the oldest event counted
	recentAccepts                       int64
	recentFirst                         time.Time
}

// acceptRate is accepts per second: over the time the window has
// watched, or over its last two slices when that is higher, so a rate
// that has just risen (a herd's first successes) is not diluted by the
// time before it.
func (w windowStats) acceptRate(now time.Time) float64 {
	// A floor of a millisecond keeps a burst of simultaneous accepts
	// from reading as an infinite rate.
	rate := func(n int64, since time.Time) float64 {
		return float64(n) / max(now.Sub(since), time.Millisecond).Seconds()
	}
	r := rate(w.accepts, w.first)
	if w.recentAccepts > 0 {
		r = max(r, rate(w.recentAccepts, w.recentFirst))
	}
	return r
}

func (b *AdaptiveBudget) window(now time.Time) windowStats {
	var w windowStats
	if b.epoch.IsZero() {
		return w
	}
	cur := b.sliceIndex(now)
	for i := range b.slices {
		s := &b.slices[i]
		if s.first.IsZero() || s.index > cur || s.index <= cur-budgetSlices {
			continue
		}
		w.requests += s.requests
		w.accepts += s.accepts
		w.retries += s.retries
		w.refused += s.refused
		if w.first.IsZero() || s.first.Before(w.first) {
			w.first = s.first
		}
		if s.index >= cur-1 {
			w.recentAccepts += s.accepts
			if w.recentFirst.IsZero() || s.first.Before(w.recentFirst) {
				w.recentFirst = s.first
			}
		}
	}
	return w
}

// AdaptiveBudgetState is an AdaptiveBudget as of one instant, for
// metrics. The counts cover the last window.
type AdaptiveBudgetState struct {
	// Tokens in the bucket; below zero, retries deferred against the
	// accepts to come.
	Tokens float64
	// Ratio is the tokens each accepted attempt brings (the config's).
	Ratio float64
	// Requests counts the attempts the budget was told of: Accepts that
	// succeeded, the rest failed and asked for a retry.
	Requests, Accepts int64
	// Retries granted and Refused over the window.
	Retries, Refused int64
	// AcceptRate is accepted attempts per second over the window.
	AcceptRate float64
	// Down is true when the window saw attempts and none accepted: an
	// empty bucket then refuses retries instead of deferring them.
	Down bool
	// Waiting counts the Client's retries waiting for a token.
	Waiting int
}

// State returns the budget as of now (time.Now() for metrics); the
// zero state for a nil budget.
func (b *AdaptiveBudget) State(now time.Time) AdaptiveBudgetState {
	if b == nil {
		return AdaptiveBudgetState{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	tokens := b.tokens
	if dt := now.Sub(b.refilled); !b.epoch.IsZero() && dt > 0 {
		tokens = min(tokens+b.cfg.MinPerSecond*dt.Seconds(), b.cfg.Capacity)
	}
	w := b.window(now)
	st := AdaptiveBudgetState{
		Tokens: tokens, Ratio: b.cfg.Ratio,
		Requests: w.requests, Accepts: w.accepts, Retries: w.retries, Refused: w.refused,
		Down:    w.requests > 0 && w.accepts == 0,
		Waiting: len(b.waiters),
	}
	if w.accepts > 0 {
		st.AcceptRate = w.acceptRate(now)
	}
	return st
}
