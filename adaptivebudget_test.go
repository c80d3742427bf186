package idem

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the fake clock's start; every test passes its instants explicitly.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

const ms = time.Millisecond

func TestAdaptiveBudgetGrantsCapacityAtOnce(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{MinPerSecond: -1})
	for i := range DefaultAdaptiveCapacity {
		wait, ok := b.AllowRetry(t0, 7*ms, 0)
		require.True(t, ok, "retry %d", i)
		assert.Equal(t, 7*ms, wait, "a token never changes the wait")
	}
	wait, ok := b.AllowRetry(at(100*ms), 7*ms, 0)
	require.True(t, ok, "no accept yet, but too early to call the server down")
	assert.Equal(t, 7*ms+400*ms, wait, "deferred to the end of the patience, then its backoff")
	_, ok = b.AllowRetry(at(100*ms), 7*ms, 407*ms)
	assert.False(t, ok, "that deferral would reach the deadline")
	_, ok = b.AllowRetry(at(DefaultAdaptivePatience), 7*ms, 0)
	assert.False(t, ok, "failures and no accept for the patience: down, refused")
	st := b.State(at(DefaultAdaptivePatience))
	assert.Equal(t, AdaptiveBudgetState{Tokens: -1, Ratio: 1, Requests: 103, Retries: 101, Refused: 2, Down: true}, st)
}

func TestAdaptiveBudgetOutageCostsCapacityPlusFloor(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{})
	// 500 failing calls a second for 3 s, each asking for one retry.
	granted, lastSecond := 0, 0
	for i := range 1500 {
		if _, ok := b.AllowRetry(at(time.Duration(i)*2*ms), 0, 0); ok {
			granted++
			if i >= 1000 {
				lastSecond++
			}
		}
	}
	// The bucket once (gone at about 200 ms), then, on patience up to
	// 500 ms, every retry owed to the floor (about 150, within the
	// patience debt of 1.5 C), which repays them before it funds any more
	// within the 3 s: 250 retries for the 250 calls of the patience.
	assert.Equal(t, 250, granted)
	assert.LessOrEqual(t, float64(1500+granted)/1500, 1.2, "whole run")
	assert.LessOrEqual(t, float64(500+lastSecond)/500, 1.1, "once adapted")
	assert.True(t, b.State(at(3*time.Second)).Down)
}

func TestAdaptiveBudgetPatienceOwesAtMostPatienceDebt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		cfg     AdaptiveBudgetConfig
		granted int
		tokens  float64
	}{
		{"default: 1.5 times the capacity", AdaptiveBudgetConfig{Capacity: 4, MinPerSecond: -1}, 10, -6},
		{"set", AdaptiveBudgetConfig{Capacity: 3, MinPerSecond: -1, PatienceDebt: 2}, 5, -2},
		{"none", AdaptiveBudgetConfig{Capacity: 3, MinPerSecond: -1, PatienceDebt: -1}, 3, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := NewAdaptiveBudget(c.cfg)
			granted := 0
			for range 20 {
				if _, ok := b.AllowRetry(t0, 0, 0); ok {
					granted++
				}
			}
			assert.Equal(t, c.granted, granted, "the tokens, then what may be owed")
			assert.Equal(t, c.tokens, b.State(t0).Tokens)
		})
	}
}

// A herd of 2C callers whose first success is slow: every caller's first
// rejection asks for a retry, and the retries paid from the full bucket
// come back rejected before any success, asking again. The patience debt
// covers them, so no caller is refused for a slow first success.
func TestAdaptiveBudgetHerdOf2CWithRejectedRetriesBeforeTheFirstSuccess(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{})
	for i := range 2 * DefaultAdaptiveCapacity {
		_, ok := b.AllowRetry(at(time.Duration(i)*50*time.Microsecond), 0, 0)
		require.True(t, ok, "first rejection of caller %d", i)
	}
	// A third of the retries granted at once from the bucket are
	// rejected again before the first success is seen.
	for i := range DefaultAdaptiveCapacity / 3 {
		_, ok := b.AllowRetry(at(10*ms+time.Duration(i)*50*time.Microsecond), 0, 0)
		require.True(t, ok, "second rejection %d", i)
	}
}

func TestAdaptiveBudgetDefersInOverload(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 1, Ratio: 1, MinPerSecond: -1})
	_, ok := b.AllowRetry(t0, ms, 0) // first event: the window starts here
	require.True(t, ok)
	// 10 accepts over 10 ms: 1000 a second, each adding a token that a
	// waiting retry is owed, so the bucket stays at 1 (its capacity).
	for i := range 10 {
		b.Accepted(at(time.Duration(i+1) * ms))
	}
	require.Equal(t, 1.0, b.State(at(10*ms)).Tokens)
	for range 1 {
		wait, ok := b.AllowRetry(at(10*ms), ms, 0)
		require.True(t, ok)
		assert.Equal(t, ms, wait, "the token left pays at once")
	}
	// Now every retry borrows: the n-th one is owed n tokens, which at
	// 1000 accepts a second come in n ms.
	for n := 1; n <= 5; n++ {
		wait, ok := b.AllowRetry(at(10*ms), 0, 0)
		require.True(t, ok)
		assert.Equal(t, time.Duration(n)*ms, wait, "retry %d", n)
	}
	// A longer backoff is kept.
	wait, ok := b.AllowRetry(at(10*ms), time.Second, 0)
	require.True(t, ok)
	assert.Equal(t, time.Second, wait)
	st := b.State(at(10 * ms))
	assert.Equal(t, -6.0, st.Tokens)
	assert.InDelta(t, 1000, st.AcceptRate, 1e-9)
	assert.False(t, st.Down)
	// Each accept repays one.
	b.Accepted(at(11 * ms))
	assert.Equal(t, -5.0, b.State(at(11*ms)).Tokens)
}

func TestAdaptiveBudgetRefusesBeyondDeadlineOrMaxDelay(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, Ratio: 1, MinPerSecond: -1, MaxDelay: 50 * ms})
	b.Accepted(t0)
	b.Accepted(at(100 * ms)) // 2 accepts over 100 ms: 20 a second
	wait, ok := b.AllowRetry(at(100*ms), 0, 0)
	require.True(t, ok)
	assert.Equal(t, 50*ms, wait, "one token owed at 20 a second")
	_, ok = b.AllowRetry(at(100*ms), 0, 0)
	assert.False(t, ok, "two tokens owed: 100 ms, beyond MaxDelay")
	_, ok = b.AllowRetry(at(100*ms), 0, 0)
	assert.False(t, ok)

	b = NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, Ratio: 1, MinPerSecond: -1})
	b.Accepted(t0)
	b.Accepted(at(100 * ms))
	_, ok = b.AllowRetry(at(100*ms), 0, 50*ms)
	assert.False(t, ok, "a wait reaching the deadline is refused")
	assert.Zero(t, b.State(at(100*ms)).Tokens, "a refused retry owes nothing")
	wait, ok = b.AllowRetry(at(100*ms), 0, 51*ms)
	require.True(t, ok)
	assert.Equal(t, 50*ms, wait)
}

func TestAdaptiveBudgetForgetsAcceptsOutsideTheWindow(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1, Patience: -1})
	b.Accepted(t0)
	_, ok := b.AllowRetry(at(500*ms), 0, 0)
	require.True(t, ok, "an accept in the window: overload, deferred")
	st := b.State(at(1100 * ms))
	assert.Zero(t, st.Accepts, "the accept's slice has expired")
	_, ok = b.AllowRetry(at(1100*ms), 0, 0)
	assert.False(t, ok, "no accept in the last second: down")
	assert.True(t, b.State(at(1100*ms)).Down)
}

func TestAdaptiveBudgetFloorRefillsAndCaps(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 5, MinPerSecond: 10})
	for range 5 {
		_, ok := b.AllowRetry(t0, 0, 0)
		require.True(t, ok)
	}
	assert.Equal(t, 1.0, b.State(at(100*ms)).Tokens)
	assert.Equal(t, 5.0, b.State(at(time.Hour)).Tokens, "capped")
	b.Accepted(at(time.Hour))
	assert.Equal(t, 5.0, b.State(at(time.Hour)).Tokens, "accepts cap too")
}

func TestAdaptiveBudgetClockGoingBack(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 1})
	b.Accepted(at(time.Second))
	_, ok := b.AllowRetry(t0, 0, 0)
	assert.True(t, ok)
	assert.NotPanics(t, func() { b.State(t0.Add(-time.Hour)) })
}

func TestAdaptiveBudgetNilIsUnlimited(t *testing.T) {
	t.Parallel()
	var b *AdaptiveBudget
	wait, ok := b.AllowRetry(t0, ms, 0)
	assert.True(t, ok)
	assert.Equal(t, ms, wait)
	b.Accepted(t0)
	assert.Zero(t, b.State(t0))
}

func TestAdaptiveBudgetConcurrentUse(t *testing.T) {
	t.Parallel()
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{})
	var mu sync.Mutex
	granted := 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				now := at(time.Duration(i) * ms)
				if (i+w)%4 == 0 {
					b.Accepted(now)
					continue
				}
				if _, ok := b.AllowRetry(now, 0, 0); ok {
					mu.Lock()
					granted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	st := b.State(at(500 * ms))
	assert.GreaterOrEqual(t, st.Tokens, -float64(DefaultAdaptiveMaxDelay/time.Second)*st.AcceptRate*2)
	assert.Positive(t, granted)
}

func TestClientDefaultBudgetIsAdaptive(t *testing.T) {
	t.Parallel()
	c, err := New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, ok := c.Budget().(*AdaptiveBudget)
	assert.True(t, ok)
	c2, err := New(WithBudget(nil))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Close() })
	assert.Nil(t, c2.Budget())
}

func BenchmarkAdaptiveBudget(b *testing.B) {
	budget := NewAdaptiveBudget(AdaptiveBudgetConfig{})
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			now := at(time.Duration(i) * time.Microsecond)
			if i%2 == 0 {
				budget.Accepted(now)
			} else {
				budget.AllowRetry(now, 0, 0)
			}
			i++
		}
	})
}
