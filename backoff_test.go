package idem

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seededRand returns a reproducible uniform source. It is not safe for
// concurrent use, which these tests do not need.
func seededRand(seed uint64) func() float64 {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Float64
}

// constantRand returns a source that always yields r.
func constantRand(r float64) func() float64 {
	return func() float64 { return r }
}

func TestBackoffFullJitterIsReproducibleAndBounded(t *testing.T) {
	t.Parallel()
	const base, ceiling = 100 * time.Millisecond, 10 * time.Second
	a := FullJitter(base, ceiling, seededRand(42))
	b := FullJitter(base, ceiling, seededRand(42))
	other := FullJitter(base, ceiling, seededRand(43))

	differs := false
	for n := range 20 {
		wa, wb, wo := a(n), b(n), other(n)
		assert.Equal(t, wa, wb, "same seed, retry %d", n)
		differs = differs || wa != wo
		bound := min(ceiling, base<<n)
		assert.GreaterOrEqual(t, wa, time.Duration(0), "retry %d", n)
		assert.Less(t, wa, bound, "retry %d", n)
	}
	assert.True(t, differs, "another seed should give other waits")
}

func TestBackoffFullJitterBoundPerRetry(t *testing.T) {
	t.Parallel()
	// With r just below 1 the wait is just below the bound, which shows
	// the bound itself: base·2^n until the cap takes over.
	b := FullJitter(100*time.Millisecond, 10*time.Second, constantRand(math.Nextafter(1, 0)))
	wants := []time.Duration{
		100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond,
		6400 * time.Millisecond, 10 * time.Second, 10 * time.Second,
	}
	for n, bound := range wants {
		got := b(n)
		assert.Less(t, got, bound, "retry %d", n)
		assert.Greater(t, got, bound-bound/1000, "retry %d", n)
	}
	assert.Equal(t, time.Duration(0), FullJitter(time.Second, time.Minute, constantRand(0))(5))
}

func TestBackoffOverflowSafe(t *testing.T) {
	t.Parallel()
	const base, ceiling = 100 * time.Millisecond, 10 * time.Second
	high := constantRand(math.Nextafter(1, 0))
	for _, n := range []int{62, 63, 64, 65, 100, 1000, math.MaxInt} {
		assert.Equal(t, ceiling, Exponential(base, ceiling)(n), "Exponential n=%d", n)
		w := FullJitter(base, ceiling, high)(n)
		assert.Less(t, w, ceiling, "FullJitter n=%d", n)
		assert.Greater(t, w, ceiling/2, "FullJitter n=%d", n)
		w = EqualJitter(base, ceiling, high)(n)
		assert.Less(t, w, ceiling, "EqualJitter n=%d", n)
		assert.GreaterOrEqual(t, w, ceiling/2, "EqualJitter n=%d", n)
	}
	// A cap near the largest Duration must not overflow either.
	huge := time.Duration(math.MaxInt64)
	for _, n := range []int{1, 40, 62, 63, 1000} {
		assert.Positive(t, Exponential(time.Second, huge)(n), "n=%d", n)
		assert.GreaterOrEqual(t, FullJitter(time.Second, huge, high)(n), time.Duration(0), "n=%d", n)
	}
	assert.Equal(t, huge, Exponential(time.Second, huge)(1000))
}

func TestBackoffNegativeRetryCountsAsFirst(t *testing.T) {
	t.Parallel()
	e := Exponential(time.Second, time.Minute)
	assert.Equal(t, time.Second, e(-1))
	assert.Equal(t, time.Second, e(math.MinInt))
}

func TestBackoffClamping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		base, cap  time.Duration
		first, top time.Duration
	}{
		{"defaults for zero", 0, 0, DefaultBackoffBase, DefaultBackoffCap},
		{"defaults for negative", -time.Second, -time.Second, DefaultBackoffBase, DefaultBackoffCap},
		{"cap below base is raised to base", 5 * time.Second, time.Second, 5 * time.Second, 5 * time.Second},
		{"zero cap with large base", time.Minute, 0, time.Minute, time.Minute},
		{"valid bounds kept", time.Millisecond, time.Second, time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Exponential(tt.base, tt.cap)
			assert.Equal(t, tt.first, e(0))
			assert.Equal(t, tt.top, e(1000))
		})
	}
}

func TestBackoffOutOfRangeRandomIsClamped(t *testing.T) {
	t.Parallel()
	const base, ceiling = time.Second, time.Minute
	for _, r := range []float64{-1, 1, 1.5, math.Inf(1), math.Inf(-1), math.NaN()} {
		for _, b := range []Backoff{
			FullJitter(base, ceiling, constantRand(r)),
			EqualJitter(base, ceiling, constantRand(r)),
		} {
			for _, n := range []int{0, 3, 100} {
				w := b(n)
				bound := min(ceiling, base<<min(n, 10))
				assert.GreaterOrEqual(t, w, time.Duration(0), "r=%v n=%d", r, n)
				assert.Less(t, w, bound, "r=%v n=%d", r, n)
			}
		}
		d := DecorrelatedJitter(base, ceiling, constantRand(r))
		for n := range 10 {
			w := d(n)
			assert.GreaterOrEqual(t, w, base, "r=%v n=%d", r, n)
			assert.LessOrEqual(t, w, ceiling, "r=%v n=%d", r, n)
		}
	}
}

func TestBackoffFullJitterDistribution(t *testing.T) {
	t.Parallel()
	// The mean of a uniform draw on [0, bound) is bound/2; over 20 000
	// samples its standard error is about 0.2% of the bound, so 5% is a
	// tolerance of some 25 standard errors.
	const samples = 20_000
	const n = 3
	bound := DefaultBackoffBase << n
	for name, rnd := range map[string]func() float64{"default source": nil, "seeded": seededRand(7)} {
		b := FullJitter(DefaultBackoffBase, DefaultBackoffCap, rnd)
		var sum float64
		lowerHalf := 0
		for range samples {
			w := b(n)
			require.GreaterOrEqual(t, w, time.Duration(0))
			require.Less(t, w, bound)
			sum += float64(w)
			if w < bound/2 {
				lowerHalf++
			}
		}
		mean := sum / samples
		assert.InEpsilon(t, float64(bound)/2, mean, 0.05, name)
		assert.InEpsilon(t, samples/2, lowerHalf, 0.05, name)
	}
}

func TestBackoffExponentialSequence(t *testing.T) {
	t.Parallel()
	e := Exponential(100*time.Millisecond, time.Second)
	var got []time.Duration
	for n := range 6 {
		got = append(got, e(n))
	}
	assert.Equal(t, []time.Duration{
		100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second,
	}, got)
}

func TestBackoffEqualJitterKeepsHalf(t *testing.T) {
	t.Parallel()
	const base, ceiling = 100 * time.Millisecond, 10 * time.Second
	b := EqualJitter(base, ceiling, seededRand(3))
	for n := range 12 {
		bound := min(ceiling, base<<n)
		w := b(n)
		assert.GreaterOrEqual(t, w, bound/2, "retry %d", n)
		assert.Less(t, w, bound, "retry %d", n)
	}
	assert.Equal(t, 50*time.Millisecond, EqualJitter(base, ceiling, constantRand(0))(0))
}

func TestBackoffDecorrelatedJitter(t *testing.T) {
	t.Parallel()
	const base = 100 * time.Millisecond
	// With r = 0.5 each wait is base + (3·prev - base)/2.
	d := DecorrelatedJitter(base, 10*time.Second, constantRand(0.5))
	assert.Equal(t, 200*time.Millisecond, d(0))
	assert.Equal(t, 350*time.Millisecond, d(1))
	assert.Equal(t, 575*time.Millisecond, d(2))
	assert.Equal(t, 912500*time.Microsecond, d(3))
	assert.Equal(t, 200*time.Millisecond, d(0), "n == 0 starts a new sequence")

	// The upper end of the draw is capped: 3·350ms is above a 1s cap.
	c := DecorrelatedJitter(base, time.Second, constantRand(0.5))
	assert.Equal(t, 200*time.Millisecond, c(0))
	assert.Equal(t, 350*time.Millisecond, c(1))
	assert.Equal(t, 550*time.Millisecond, c(2))

	// Each closure has its own state.
	e := DecorrelatedJitter(base, 10*time.Second, constantRand(0.5))
	assert.Equal(t, 200*time.Millisecond, e(0))

	// Seeded and bounded, also with a cap near the largest Duration.
	huge := time.Duration(math.MaxInt64)
	for _, ceiling := range []time.Duration{10 * time.Second, huge} {
		r := DecorrelatedJitter(base, ceiling, seededRand(11))
		high := DecorrelatedJitter(base, ceiling, constantRand(math.Nextafter(1, 0)))
		for n := range 200 {
			w := r(n)
			assert.GreaterOrEqual(t, w, base)
			assert.LessOrEqual(t, w, ceiling)
			w = high(n)
			assert.GreaterOrEqual(t, w, base)
			assert.LessOrEqual(t, w, ceiling)
		}
		assert.InEpsilon(t, float64(ceiling), float64(high(200)), 1e-9, "growth saturates at the cap")
	}
}

func TestBackoffConcurrentUse(t *testing.T) {
	t.Parallel()
	policies := []Backoff{
		FullJitter(0, 0, nil),
		EqualJitter(0, 0, nil),
		DecorrelatedJitter(0, 0, nil),
		Exponential(0, 0),
	}
	var wg sync.WaitGroup
	for _, b := range policies {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range 500 {
					w := b(n % 20)
					if w < 0 || w > DefaultBackoffCap {
						t.Errorf("wait %v out of range", w)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
}

func BenchmarkFullJitter(b *testing.B) {
	backoff := FullJitter(DefaultBackoffBase, DefaultBackoffCap, nil)
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			_ = backoff(n % 10)
			n++
		}
	})
}
