package server

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The index finds every slot it holds, and only those, through random
// adds and removes of hash fragments crowded into few homes (so probes collide,
// repeat a hash and wrap around the table's end), growth and shrinking.
func TestMemIndexAgainstAMap(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var x memIndex
	want := map[int]uint32{} // slot → hash fragment
	lookup := func(h uint32) map[int]bool {
		found := map[int]bool{}
		if len(x.cells) == 0 {
			return found
		}
		mask := len(x.cells) - 1
		for i := x.home(h); x.cells[i].slot != 0; i = (i + 1) & mask {
			if x.cells[i].frag == h {
				found[int(x.cells[i].slot-1)] = true
			}
		}
		return found
	}
	check := func() {
		require.Equal(t, len(want), x.n)
		byHash := map[uint32]map[int]bool{}
		for slot, h := range want {
			if byHash[h] == nil {
				byHash[h] = map[int]bool{}
			}
			byHash[h][slot] = true
		}
		for h, slots := range byHash {
			require.Equal(t, slots, lookup(h), "hash %#x", h)
		}
	}
	next := 0
	for round := range 20000 {
		if len(want) == 0 || rng.IntN(3) != 0 {
			// Homes differ in the bits above the part's; many share one,
			// a few hashes repeat exactly, and the part bits vary.
			h := uint32(rng.IntN(64))
			switch rng.IntN(10) {
			case 0:
				h = 0xabc
			case 1, 2, 3: // homes at the table's end, whatever its size
				h = 1<<32 - 1 - uint32(rng.IntN(32))
			}
			want[next] = h
			x.add(h, next)
			next++
		} else {
			for slot, h := range want {
				x.remove(h, slot)
				delete(want, slot)
				break
			}
		}
		if round%500 == 0 {
			check()
			if round%2000 == 0 {
				x.shrink()
				check()
			}
		}
	}
	for slot, h := range want {
		x.remove(h, slot)
		delete(want, slot)
	}
	check()
	x.remove(42, 7) // not indexed: harmless
	x.shrink()
	require.Len(t, x.cells, memIndexMinCells)
}
