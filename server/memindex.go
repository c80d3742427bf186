package server

// memIndex finds a MemoryStore part's slots by the hash of their (scope,
// key): an open-addressing table with linear probing, one array of
// pointer-free cells. A Go map would do, but a lookup of a new key (every
// Reserve) walks the map's directory, table and group, each a cache miss
// in a large store; here it is one. Records whose hashes are equal each
// have their own cell: a lookup compares the full scope and key of every
// cell with its hash.
type memIndex struct {
	cells []memCell // a power of two long, or empty
	n     int       // cells in use
}

// memCell is one cell of a memIndex.
type memCell struct {
	hash uint64
	slot uint32 // 1 + the slot, 0 for an empty cell
}

// memIndexMinCells is the smallest table a part allocates.
const memIndexMinCells = 16

// home is the cell a hash is looked up from. The low bits of the hash
// chose the part, so the next ones choose the cell.
func (x *memIndex) home(h uint64) int { return int(h>>8) & (len(x.cells) - 1) }

// add records that slot has hash h.
func (x *memIndex) add(h uint64, slot int) {
	if 4*(x.n+1) > 3*len(x.cells) {
		x.resize(max(memIndexMinCells, 2*len(x.cells)))
	}
	mask := len(x.cells) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		if x.cells[i].slot == 0 {
			x.cells[i] = memCell{hash: h, slot: uint32(slot + 1)}
			x.n++
			return
		}
	}
}

// remove forgets slot, whose hash is h, shifting back the cells after it
// that probed past it so every lookup still finds its cell before an empty
// one.
func (x *memIndex) remove(h uint64, slot int) {
	if len(x.cells) == 0 {
		return
	}
	mask := len(x.cells) - 1
	i := x.home(h)
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
		if k := x.home(c.hash); (i < j && i < k && k <= j) || (i > j && (i < k || k <= j)) {
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
			x.add(c.hash, int(c.slot-1))
		}
	}
}

// shrink gives back the memory of a table mostly emptied by a sweep.
func (x *memIndex) shrink() {
	if len(x.cells) > memIndexMinCells && 8*x.n < len(x.cells) {
		size := memIndexMinCells
		for 4*x.n > size {
			size *= 2
		}
		x.resize(size)
	}
}
