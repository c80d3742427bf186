package server

import (
	"math/rand/v2"
	"sync"
	"time"
)

// memShard is one independently locked part of a MemoryStore. Nothing it
// holds per record is a pointer (see memSlot): the garbage collector
// marks a part's few objects, not its records.
type memShard struct {
	mu     sync.Mutex
	closed bool
	index  memIndex // memHash of (scope, key) → slot
	// slots are the records, in blocks of memSlotBlock that are never
	// copied to grow; nslots of them have been used.
	slots  [][]memSlot
	nslots int
	free   []uint32      // slots of deleted records, reused first
	tokens *rand.ChaCha8 // where fencing tokens come from
	// chunks hold the records' identity and response regions, appended
	// to the current chunk, cur; a region larger than memChunkSize/4 has a
	// chunk of its own. Chunks are never copied to grow. A chunk whose
	// regions are all dead is dropped (nil, its number in freeChunks for
	// reuse); compact moves the live regions out of sparse chunks once
	// the dead bytes are more than half of the total.
	chunks     [][]byte
	chunkLive  []int // live bytes of each chunk
	freeChunks []uint32
	cur        int // the chunk small regions are appended to, -1 for none
	total      int // bytes in chunks, dead or alive
	dead       int
	// nextDue (unix nanoseconds), when dueKnown, is no later than the
	// earliest time a record of the part becomes due: a full store
	// refusing new keys skips the scan for due records until then, so a
	// flood of refused requests costs no scans.
	nextDue  int64
	dueKnown bool
	_        [64]byte // keeps neighbouring locks off one cache line
}

// memSlotBlock is how many slots a block holds, a power of two.
// Small, so a part with few records costs little: a store touches all
// 256 parts as soon as it holds a few hundred keys.
const memSlotBlock = 64

// slot returns slot i.
func (sh *memShard) slot(i int) *memSlot { return &sh.slots[i/memSlotBlock][i%memSlotBlock] }

// Sizes of a part's arena chunks: the first is small, each next one twice
// the last, up to memChunkSize.
const (
	memFirstChunkSize = 1 << 10
	memChunkSize      = 64 << 10
)

// noteDue lowers sh's nextDue to due. Callers hold sh's lock and call it
// for every record they write.
func (sh *memShard) noteDue(due int64) {
	if sh.dueKnown && due < sh.nextDue {
		sh.nextDue = due
	}
}

// find returns the slot of (scope, key), whose hash is h, or -1.
func (sh *memShard) find(h uint64, scope Scope, key string) int {
	x := &sh.index
	if len(x.cells) == 0 {
		return -1
	}
	mask, frag := len(x.cells)-1, memFrag(h)
	for i := x.home(frag); ; i = (i + 1) & mask {
		c := x.cells[i]
		if c.slot == 0 {
			return -1
		}
		if c.frag != frag {
			continue
		}
		if sl := sh.slot(int(c.slot - 1)); sl.hash == h && sh.matches(sl, scope, key) {
			return int(c.slot - 1)
		}
	}
}

// matches reports whether sl is the record of (scope, key): hashes
// collide, so the identity region is compared in full.
func (sh *memShard) matches(sl *memSlot, scope Scope, key string) bool {
	if int(sl.keyLen) != len(key) || int(sl.principalLen) != len(scope.Principal) ||
		int(sl.methodLen) != len(scope.Method) || int(sl.routeLen) != len(scope.Route) {
		return false
	}
	b := sh.bytes(sl.id)
	for _, s := range [...]string{key, scope.Principal, scope.Method, scope.Route} {
		if string(b[:len(s)]) != s {
			return false
		}
		b = b[len(s):]
	}
	return true
}

// bytes returns the bytes of r, a view of the arena.
func (sh *memShard) bytes(r memRegion) []byte {
	return sh.chunks[r.chunk][r.off : r.off+r.n]
}

// fingerprint returns the fingerprint sl holds, as a view of the arena.
func (sh *memShard) fingerprint(sl *memSlot) []byte {
	id := sh.bytes(sl.id)
	return id[len(id)-int(sl.fp):]
}

// alloc returns a new region of n bytes and its memory, uninitialised
// unless the chunk is new.
func (sh *memShard) alloc(n int) (memRegion, []byte) {
	sh.total += n
	if n > memChunkSize/4 {
		c := sh.newChunk(make([]byte, n))
		sh.chunkLive[c] += n
		return memRegion{chunk: uint32(c), n: uint32(n)}, sh.chunks[c]
	}
	if sh.cur < 0 || cap(sh.chunks[sh.cur])-len(sh.chunks[sh.cur]) < n {
		size := memFirstChunkSize
		if old := sh.cur; old >= 0 {
			size = min(memChunkSize, 2*cap(sh.chunks[old]))
			sh.cur = -1
			sh.dropIfDead(old)
		}
		sh.cur = sh.newChunk(make([]byte, 0, max(size, n)))
	}
	c := sh.cur
	chunk := sh.chunks[c]
	off := len(chunk)
	sh.chunks[c] = chunk[:off+n]
	sh.chunkLive[c] += n
	return memRegion{chunk: uint32(c), off: uint32(off), n: uint32(n)}, chunk[off : off+n]
}

// newChunk adds b as a chunk and returns its number.
func (sh *memShard) newChunk(b []byte) int {
	if n := len(sh.freeChunks); n > 0 {
		c := int(sh.freeChunks[n-1])
		sh.freeChunks = sh.freeChunks[:n-1]
		sh.chunks[c], sh.chunkLive[c] = b, 0
		return c
	}
	sh.chunks = append(sh.chunks, b)
	sh.chunkLive = append(sh.chunkLive, 0)
	return len(sh.chunks) - 1
}

// release marks region r dead.
func (sh *memShard) release(r memRegion) {
	if r.n == 0 {
		return
	}
	sh.dead += int(r.n)
	sh.chunkLive[r.chunk] -= int(r.n)
	sh.dropIfDead(int(r.chunk))
}

// dropIfDead drops chunk c if it is not the current one and none of its
// regions is live: its bytes leave the total and the dead count.
func (sh *memShard) dropIfDead(c int) {
	if c == sh.cur || sh.chunkLive[c] != 0 || sh.chunks[c] == nil {
		return
	}
	sh.total -= len(sh.chunks[c])
	sh.dead -= len(sh.chunks[c])
	sh.chunks[c] = nil
	sh.freeChunks = append(sh.freeChunks, uint32(c))
}

// insert takes a slot for a new record of (scope, key) with hash h and
// returns it with its identity region written.
func (sh *memShard) insert(h uint64, scope Scope, key, fingerprint string) int {
	var i int
	if n := len(sh.free); n > 0 {
		i = int(sh.free[n-1])
		sh.free = sh.free[:n-1]
	} else {
		if sh.nslots == len(sh.slots)*memSlotBlock {
			sh.slots = append(sh.slots, make([]memSlot, memSlotBlock))
		}
		i = sh.nslots
		sh.nslots++
	}
	sl := sh.slot(i)
	*sl = memSlot{hash: h, used: true}
	sh.index.add(memFrag(h), i)
	sh.writeIdentity(sl, scope, key, fingerprint)
	return i
}

// writeIdentity writes sl's identity region anew.
func (sh *memShard) writeIdentity(sl *memSlot, scope Scope, key, fingerprint string) {
	sh.release(sl.id)
	sl.keyLen, sl.principalLen, sl.methodLen, sl.routeLen, sl.fp = uint32(len(key)),
		uint32(len(scope.Principal)), uint32(len(scope.Method)), uint32(len(scope.Route)), uint32(len(fingerprint))
	var b []byte
	sl.id, b = sh.alloc(len(key) + len(scope.Principal) + len(scope.Method) + len(scope.Route) + len(fingerprint))
	n := copy(b, key)
	n += copy(b[n:], scope.Principal)
	n += copy(b[n:], scope.Method)
	n += copy(b[n:], scope.Route)
	copy(b[n:], fingerprint)
}

// setResponse stores r, whose encoding takes size bytes
// (encodedResponseLen), as sl's response.
func (sh *memShard) setResponse(sl *memSlot, r Response, size int) {
	sh.dropResponse(sl)
	var b []byte
	sl.resp, b = sh.alloc(size)
	appendResponse(b[:0], r)
}

// dropResponse forgets sl's response.
func (sh *memShard) dropResponse(sl *memSlot) {
	sh.release(sl.resp)
	sl.resp = memRegion{}
}

// remove deletes the record in slot i.
func (sh *memShard) remove(i int) {
	sl := sh.slot(i)
	sh.index.remove(memFrag(sl.hash), i)
	sh.release(sl.id)
	sh.release(sl.resp)
	*sl = memSlot{}
	sh.free = append(sh.free, uint32(i))
}

// memArenaSlack is how many dead bytes a part keeps before compact
// rewrites its arena: small parts are not rewritten for every delete.
const memArenaSlack = 16 << 10

// compact moves the live regions out of the sparse chunks (less than
// half live) once the dead bytes are more than half of the arena, and the
// emptied chunks are dropped: the arena stays within about twice what its
// records use, and each live byte is copied a bounded number of times per
// byte written. Records deleted in the order they were written (as
// retention expires) empty whole chunks, which are dropped without any
// copy. Callers hold sh's lock.
func (sh *memShard) compact() {
	if sh.dead <= memArenaSlack || 2*sh.dead <= sh.total {
		return
	}
	sparse := make([]bool, len(sh.chunks))
	for c, b := range sh.chunks {
		sparse[c] = b != nil && 2*sh.chunkLive[c] < len(b)
	}
	if old := sh.cur; old >= 0 && sparse[old] {
		sh.cur = -1 // emptied like the others, then dropped
		sh.dropIfDead(old)
	}
	move := func(r memRegion) memRegion {
		if r.n == 0 || int(r.chunk) >= len(sparse) || !sparse[r.chunk] {
			return r
		}
		moved, b := sh.alloc(int(r.n))
		copy(b, sh.bytes(r))
		sh.release(r)
		if int(moved.chunk) < len(sparse) {
			sparse[moved.chunk] = false // a dropped chunk's number, reused
		}
		return moved
	}
	for i := range sh.nslots {
		if sl := sh.slot(i); sl.used {
			sl.id, sl.resp = move(sl.id), move(sl.resp)
		}
	}
	if len(sh.free) > sh.nslots/2 {
		sh.shrinkSlots()
	}
	sh.index.shrink()
}

// shrinkSlots drops the free slots at the end, after a sweep deleted
// most of a part, and the blocks left empty.
func (sh *memShard) shrinkSlots() {
	n := sh.nslots
	for n > 0 && !sh.slot(n-1).used {
		n--
	}
	if n == sh.nslots {
		return
	}
	blocks := (n + memSlotBlock - 1) / memSlotBlock
	clear(sh.slots[blocks:])
	sh.slots, sh.nslots = sh.slots[:blocks], n
	free := sh.free[:0]
	for _, i := range sh.free {
		if int(i) < n {
			free = append(free, i)
		}
	}
	sh.free = append([]uint32(nil), free...)
}

// reset empties sh, as Close does.
func (sh *memShard) reset() {
	sh.index, sh.slots, sh.nslots, sh.free = memIndex{}, nil, 0, nil
	sh.chunks, sh.chunkLive, sh.freeChunks, sh.cur, sh.total, sh.dead = nil, nil, nil, -1, 0, 0
}

// timeOf is a record's unix-nanosecond time as a time.Time in loc.
func timeOf(ns int64, loc *time.Location) time.Time { return time.Unix(0, ns).In(loc) }

// record returns the public form of sl, the record of (scope, key), with
// memory of its own: callers never share the store's. Its times are in
// loc, the location of the store's clock.
func (sh *memShard) record(sl *memSlot, scope Scope, key string, loc *time.Location) *Record {
	rec := &Record{
		Scope:       scope,
		Key:         key,
		Fingerprint: string(sh.fingerprint(sl)),
		State:       StateReserved,
		CreatedAt:   timeOf(sl.createdAt, loc),
	}
	if !sl.completed {
		rec.Token = sl.tokenText()
		rec.LeaseExpires = timeOf(sl.deadline, loc)
		return rec
	}
	rec.State = StateCompleted
	rec.ExpiresAt = timeOf(sl.deadline, loc)
	if resp, err := decodeResponse(sh.bytes(sl.resp)); err == nil {
		rec.Response = &resp
	}
	return rec
}
