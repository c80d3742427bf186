package bench

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMedian(t *testing.T) {
	t.Parallel()
	assert.True(t, math.IsNaN(Median(nil)))
	assert.Equal(t, 2.0, Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, Median([]float64{4, 1, 3, 2}))
	in := []float64{3, 1, 2}
	Median(in)
	assert.Equal(t, []float64{3, 1, 2}, in, "input left unsorted")
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(100-i) * time.Millisecond
	}
	assert.Equal(t, 50*time.Millisecond, Percentile(ds, 50))
	assert.Equal(t, 99*time.Millisecond, Percentile(ds, 99))
	assert.Equal(t, 100*time.Millisecond, Percentile(ds, 100))
	assert.Equal(t, 1*time.Millisecond, Percentile(ds, 0.1))
	assert.Equal(t, time.Duration(0), Percentile(nil, 50))
}
