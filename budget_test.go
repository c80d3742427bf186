package idem

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newDefaultBudget() *Budget {
	return NewBudget(DefaultBudgetCapacity, DefaultBudgetRetryCost, DefaultBudgetSuccessRefill)
}

// drainBudget empties b and returns how many retries it granted.
func drainBudget(b *Budget) int {
	n := 0
	for b.TryRetry() {
		n++
	}
	return n
}

func TestBudgetStartsFullAndEmpties(t *testing.T) {
	t.Parallel()
	b := newDefaultBudget()
	assert.Equal(t, float64(DefaultBudgetCapacity), b.Tokens())
	assert.Equal(t, DefaultBudgetCapacity, drainBudget(b))
	assert.Zero(t, b.Tokens())
	assert.False(t, b.TryRetry())
}

func TestBudgetSuccessesFundRetries(t *testing.T) {
	t.Parallel()
	b := newDefaultBudget()
	drainBudget(b)
	for range 9 {
		b.Success()
	}
	assert.False(t, b.TryRetry(), "0.9 tokens do not pay for a retry")
	// Ten refills of 0.1 make exactly one token: no float drift.
	b.Success()
	assert.Equal(t, 1.0, b.Tokens())
	assert.True(t, b.TryRetry())
	assert.False(t, b.TryRetry())
}

func TestBudgetRefillStopsAtCapacity(t *testing.T) {
	t.Parallel()
	b := NewBudget(2, 1, 0.75)
	b.Success()
	assert.Equal(t, 2.0, b.Tokens())
	require.True(t, b.TryRetry())
	b.Success()
	b.Success()
	assert.Equal(t, 2.0, b.Tokens())
}

func TestBudgetClamping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                     string
		capacity, cost, refill   float64
		wantTokens               float64
		wantFirstRetry, wantMore bool
	}{
		{"negative capacity is empty", -5, 1, 0.1, 0, false, false},
		{"NaN capacity is empty", math.NaN(), 1, 0.1, 0, false, false},
		{"zero cost is free", 0, 0, 0, 0, true, true},
		{"negative cost is free", 1, -1, 0, 1, true, true},
		{"NaN cost is free", 1, math.NaN(), 0, 1, true, true},
		{"infinite capacity is a trillion", math.Inf(1), 1, 0, maxBudgetTokens, true, true},
		{"infinite cost never pays", 10, math.Inf(1), 0.1, 10, false, false},
		{"fractions of a millionth round", 1e-7, 1e-7, 0, 0, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBudget(tt.capacity, tt.cost, tt.refill)
			assert.Equal(t, tt.wantTokens, b.Tokens())
			assert.Equal(t, tt.wantFirstRetry, b.TryRetry())
			assert.Equal(t, tt.wantMore, b.TryRetry())
			assert.GreaterOrEqual(t, b.Tokens(), 0.0)
		})
	}
}

func TestBudgetNegativeRefillNeverRefills(t *testing.T) {
	t.Parallel()
	b := NewBudget(1, 1, -3)
	require.True(t, b.TryRetry())
	b.Success()
	assert.Zero(t, b.Tokens())
}

func TestBudgetNilIsUnlimited(t *testing.T) {
	t.Parallel()
	var b *Budget
	for range 1000 {
		require.True(t, b.TryRetry())
	}
	b.Success()
	assert.True(t, math.IsInf(b.Tokens(), 1))
}

func TestBudgetConcurrentRetriesNeverOverspend(t *testing.T) {
	t.Parallel()
	b := newDefaultBudget()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if b.TryRetry() {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, DefaultBudgetCapacity, granted.Load())
	assert.Zero(t, b.Tokens())
}

func TestBudgetConcurrentRetriesAndSuccesses(t *testing.T) {
	t.Parallel()
	b := newDefaultBudget()
	var granted, successes atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				if (i+w)%3 == 0 {
					b.Success()
					successes.Add(1)
				} else if b.TryRetry() {
					granted.Add(1)
				}
				if tok := b.Tokens(); tok < 0 || tok > DefaultBudgetCapacity {
					t.Errorf("tokens %v out of [0, capacity]", tok)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Every grant was paid for: what was there at the start plus what the
	// successes brought, less what is left.
	maxGranted := DefaultBudgetCapacity + float64(successes.Load())*DefaultBudgetSuccessRefill - b.Tokens()
	assert.LessOrEqual(t, float64(granted.Load()), maxGranted+1e-9)
	assert.Greater(t, granted.Load(), int64(DefaultBudgetCapacity), "successes must fund more retries")
}

// simulateCalls runs calls calls of up to maxAttempts attempts each against a
// server whose attempts succeed with probability pSuccess, spending from
// b. It returns the retries made and the calls that succeeded.
func simulateCalls(b *Budget, calls, maxAttempts int, pSuccess float64, rng *rand.Rand) (retries, successes int) {
	for range calls {
		for attempt := 1; ; attempt++ {
			if rng.Float64() < pSuccess {
				b.Success()
				successes++
				break
			}
			if attempt == maxAttempts || !b.TryRetry() {
				break
			}
			retries++
		}
	}
	return retries, successes
}

func TestBudgetTotalOutageSpendsAtMostCapacity(t *testing.T) {
	t.Parallel()
	b := newDefaultBudget()
	retries, successes := simulateCalls(b, 1000, 5, 0, rand.New(rand.NewPCG(1, 1)))
	require.Zero(t, successes)
	// Without a budget: 4000 retries. With it: the bucket, then nothing,
	// so 1000 calls cost 1100 attempts instead of 5000.
	assert.Equal(t, DefaultBudgetCapacity/DefaultBudgetRetryCost, retries)
	assert.Zero(t, b.Tokens())
}

func TestBudgetSustainsTenPercentOnHalfFailures(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 3))
	b := newDefaultBudget()
	drainBudget(b) // steady state: credit spent, retries live on successes alone

	retries, successes := simulateCalls(b, 20_000, 5, 0.5, rng)
	require.Positive(t, successes)
	ratio := float64(retries) / float64(successes)
	t.Logf("%d calls, %d succeeded, %d retries: %.2f%% of successes, %.2f%% of calls",
		20_000, successes, retries, 100*ratio, 100*float64(retries)/20_000)
	// Each success funds a tenth of a retry and the bucket stays near empty
	// while half the attempts fail, so nearly all of it is spent: the
	// ratio sits just under 10%, never above.
	assert.LessOrEqual(t, ratio, DefaultBudgetSuccessRefill/DefaultBudgetRetryCost)
	assert.InDelta(t, DefaultBudgetSuccessRefill, ratio, 0.005)
	// Against the 20 000 calls' first attempts that is about 5% extra
	// load, where an unbudgeted client would add nearly 100%.
	assert.Less(t, float64(retries)/20_000, 0.1)
}

func BenchmarkBudget(b *testing.B) {
	budget := newDefaultBudget()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if i%2 == 0 {
				budget.Success()
			} else {
				budget.TryRetry()
			}
			i++
		}
	})
}
