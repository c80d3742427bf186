package server

// memIndex finds a MemoryStore part's slots by the hash of their (scope,
// key): an open-addressing table with linear probing, one array of
// pointer-free cells. A Go map would do, but a lookup of a new key (every
// Reserve) walks the map's directory, table and group, each a cache miss
// in a large store; here it is one, and the table is kept at most half
// full, so a lookup of a new key mostly reads one cache line. A cell holds
// 32 bits of the hash: records whose hashes are equal there each have
// their own cell, and a lookup compares the slot's full hash, then its
// scope and key.
type memIndex struct {
	cells []memCell // a power of two long, or empty
	n     int       // cells in use
}

// memCell is one cell of a memIndex.
type memCell struct {
	frag uint32 // memFrag of the slot's hash
	slot uint32 // 1 + the slot, 0 for an empty cell
}

// memFrag is the part of a hash a cell keeps and finds its home by. The
// low bits of the hash chose the part, so the next ones are used.
func memFrag(h uint64) uint32 { return uint32(h >> 8) }

// memIndexMinCells is the smallest table a part allocates.
const memIndexMinCells = 16

// home is the cell a fragment is looked up from.
func (x *memIndex) home(frag uint32) int { return int(frag) & (len(x.cells) - 1) }

// add records that slot has a hash whose fragment is frag.
func (x *memIndex) add(frag uint32, slot int) {
	if 2*(x.n+1) > len(x.cells) {
		x.resize(max(memIndexMinCells, 2*len(x.cells)))
	}
	mask := len(x.cells) - 1
	for i := x.home(frag); ; i = (i + 1) & mask {
		if x.cells[i].slot == 0 {
			x.cells[i] = memCell{frag: frag, slot: uint32(slot + 1)}
			x.n++
			return
		}
	}
}

// remove forgets slot, whose hash has fragment frag, shifting back the cells after it
// that probed past it so every lookup still finds its cell before an empty
// one.
func (x *memIndex) remove(frag uint32, slot int) {
	if len(x.cells) == 0 {
		return
	}
	mask := len(x.cells) - 1
	i := x.home(frag)
	for probes := 0; x.cells[i].slot != uint32(slot+1); probes++ {
		if x.cells[i].slot == 0 || probes == len(x.cells) {
			return // not indexed: nothing to remove
		}
		i = (i + 1) & mask
	}
	for j := i; ; {
		j = (j + 1) & mask
		c := x.cells[j]
		if c.slot == 0 {
			break
		}
		// c stays unless its home is outside (i, j], cyclically: then a
		// lookup of it would stop at the hole at i.
		if k := x.home(c.frag); (i < j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
			continue
		}
		x.cells[i] = c
		i = j
	}
	x.cells[i] = memCell{}
	x.n--
}

// resize rebuilds the table with size cells.
func (x *memIndex) resize(size int) {
	old := x.cells
	x.cells, x.n = make([]memCell, size), 0
	for _, c := range old {
		if c.slot != 0 {
			x.add(c.frag, int(c.slot-1))
		}
	}
}

// shrink gives back the memory of a table mostly emptied by a sweep.
func (x *memIndex) shrink() {
	if len(x.cells) > memIndexMinCells && 8*x.n < len(x.cells) {
		size := memIndexMinCells
		for 4*x.n > size { // a quarter full, room to grow
			size *= 2
		}
		x.resize(size)
	}
}
