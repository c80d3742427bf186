package idem

import (
	"math"
	"sync/atomic"
)

// Defaults of the retry budget.
const (
	// DefaultBudgetCapacity is the number of tokens in a full bucket: with
	// DefaultBudgetRetryCost, 100 retries a client may spend before it
	// needs successes to earn more.
	DefaultBudgetCapacity = 100
	// DefaultBudgetRetryCost is what each retry takes from the bucket.
	DefaultBudgetRetryCost = 1
	// DefaultBudgetSuccessRefill is what each call that ends in success
	// (whatever its attempt) gives back, up to the capacity.
	DefaultBudgetSuccessRefill = 0.1
)

// tokenScale is the fixed-point resolution of a Budget: amounts are kept
// in millionths of a token, so refills such as 0.1 add up exactly instead
// of drifting as floats do.
const tokenScale = 1_000_000

// maxBudgetTokens bounds every amount so that sums of two stay far from
// int64 overflow; larger figures, +Inf included, behave as unlimited.
const maxBudgetTokens = 1e12

// Budget is a per-client token bucket that every retry spends from and
// every success refills, like gRPC retry throttling and the AWS SDK's
// retry quota. It keeps a total outage from multiplying the load on the
// server by the number of attempts.
//
// The arithmetic, with capacity C, retry cost R and success refill S:
// the bucket starts full, so up to C/R retries are granted on credit. In a
// total outage nothing refills it: at most C/R retries are spent in total,
// after which every call makes exactly one attempt. Once the bucket is
// empty, retries are funded only by successes: at most S/R extra attempts
// per success, 10% with the defaults (C = 100, R = 1, S = 0.1).
//
// A Budget is safe for concurrent use. A nil *Budget is unlimited: it
// grants every retry and ignores successes.
type Budget struct {
	tokens        atomic.Int64 // in millionths of a token
	capacity      int64
	retryCost     int64
	successRefill int64
}

// NewBudget returns a full bucket. It never fails: negative or NaN figures
// are clamped to 0, figures above a trillion tokens (or +Inf) to a
// trillion, and amounts are rounded to a millionth of a token. So a
// capacity of 0 grants no retries (unless retries are free), a retryCost
// of 0 makes retries free, and a successRefill of 0 never refills.
func NewBudget(capacity, retryCost, successRefill float64) *Budget {
	b := &Budget{
		capacity:      toMicroTokens(capacity),
		retryCost:     toMicroTokens(retryCost),
		successRefill: toMicroTokens(successRefill),
	}
	b.tokens.Store(b.capacity)
	return b
}

// TryRetry withdraws the cost of one retry and reports whether the bucket
// held enough for it. A retry it refuses must not be made.
func (b *Budget) TryRetry() bool {
	if b == nil {
		return true
	}
	for {
		cur := b.tokens.Load()
		if cur < b.retryCost {
			return false
		}
		if b.tokens.CompareAndSwap(cur, cur-b.retryCost) {
			return true
		}
	}
}

// Success refills the bucket by the success refill, up to its capacity.
// Call it once per call that ends in success.
func (b *Budget) Success() {
	if b == nil {
		return
	}
	for {
		cur := b.tokens.Load()
		next := min(cur+b.successRefill, b.capacity)
		if next <= cur || b.tokens.CompareAndSwap(cur, next) {
			return
		}
	}
}

// Tokens returns the tokens in the bucket now; +Inf for a nil Budget.
func (b *Budget) Tokens() float64 {
	if b == nil {
		return math.Inf(1)
	}
	return float64(b.tokens.Load()) / tokenScale
}

// toMicroTokens converts a figure of tokens to the fixed-point form,
// clamping as NewBudget documents.
func toMicroTokens(tokens float64) int64 {
	switch {
	case !(tokens > 0): // also NaN
		return 0
	case tokens > maxBudgetTokens:
		tokens = maxBudgetTokens
	}
	return int64(math.Round(tokens * tokenScale))
}
