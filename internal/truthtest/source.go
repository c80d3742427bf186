package truthtest

import "math/rand/v2"

// Source is where the generator draws its choices from: a seeded PRNG for
// TestTruth, the fuzzer's bytes for FuzzTruth.
type Source interface {
	// Intn returns a value in [0, n); n > 0.
	Intn(n int) int
}

// RandSource draws from a PCG seeded with seed.
type RandSource struct{ r *rand.Rand }

// NewRandSource returns a RandSource seeded with seed.
func NewRandSource(seed uint64) *RandSource {
	return &RandSource{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Intn implements Source.
func (s *RandSource) Intn(n int) int { return s.r.IntN(n) }

// ByteSource draws from a fuzz input, one or two bytes a choice; an
// exhausted input answers 0, the generator's plainest choice, so every
// input decodes into a scenario that ends.
type ByteSource struct{ b []byte }

// NewByteSource returns a ByteSource reading b.
func NewByteSource(b []byte) *ByteSource { return &ByteSource{b: b} }

// Intn implements Source.
func (s *ByteSource) Intn(n int) int {
	if n <= 1 || len(s.b) == 0 {
		return 0
	}
	v := int(s.b[0])
	s.b = s.b[1:]
	if n > 256 && len(s.b) > 0 {
		v = v<<8 | int(s.b[0])
		s.b = s.b[1:]
	}
	return v % n
}

// pick returns one of xs.
func pick[T any](s Source, xs ...T) T { return xs[s.Intn(len(xs))] }

// chance is true with probability num/den; false for a draw of 0, so an
// exhausted fuzz input makes the plainest scenario.
func chance(s Source, num, den int) bool { return s.Intn(den) >= den-num }
