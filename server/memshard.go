package server

import (
	"sync"
	"time"
)

// memShard is one independently locked part of a MemoryStore. Nothing it
// holds per record is a pointer (see memSlot): the garbage collector
// marks a part's four objects, not its records.
type memShard struct {
	mu     sync.Mutex
	closed bool
	index  map[uint64]uint32 // memHash of (scope, key) → 1 + the first slot with it
	slots  []memSlot
	free   []uint32 // slots of deleted records, reused first
	// arena holds the records' identity and response regions, appended;
	// dead counts the bytes of it no record uses any more, and compact
	// rewrites it when they are more than half of it.
	arena []byte
	dead  int
	// nextDue (unix nanoseconds), when dueKnown, is no later than the
	// earliest time a record of the part becomes due: a full store
	// refusing new keys skips the scan for due records until then, so a
	// flood of refused requests costs no scans.
	nextDue  int64
	dueKnown bool
	_        [64]byte // keeps neighbouring locks off one cache line
}

// noteDue lowers sh's nextDue to due. Callers hold sh's lock and call it
// for every record they write.
func (sh *memShard) noteDue(due int64) {
	if sh.dueKnown && due < sh.nextDue {
		sh.nextDue = due
	}
}

// find returns the slot of (scope, key), whose hash is h, or -1.
func (sh *memShard) find(h uint64, scope Scope, key string) int {
	for i := sh.index[h]; i != 0; i = sh.slots[i-1].next {
		if sh.matches(&sh.slots[i-1], scope, key) {
			return int(i - 1)
		}
	}
	return -1
}

// matches reports whether sl is the record of (scope, key): hashes
// collide, so the identity region is compared in full.
func (sh *memShard) matches(sl *memSlot, scope Scope, key string) bool {
	if int(sl.keyLen) != len(key) || int(sl.principalLen) != len(scope.Principal) ||
		int(sl.methodLen) != len(scope.Method) || int(sl.routeLen) != len(scope.Route) {
		return false
	}
	b := sh.arena[sl.idOff:]
	for _, s := range [...]string{key, scope.Principal, scope.Method, scope.Route} {
		if string(b[:len(s)]) != s {
			return false
		}
		b = b[len(s):]
	}
	return true
}

// fingerprint returns the fingerprint sl holds, as a view of the arena
// valid until the part's next write.
func (sh *memShard) fingerprint(sl *memSlot) []byte {
	end := sl.idOff + sl.idLen()
	return sh.arena[end-int(sl.fp) : end]
}

// response returns the encoded response sl holds, as a view of the arena.
func (sh *memShard) response(sl *memSlot) []byte {
	return sh.arena[sl.respOff : sl.respOff+int(sl.respLen)]
}

// insert takes a slot for a new record of (scope, key) with hash h and
// returns it with its identity region written.
func (sh *memShard) insert(h uint64, scope Scope, key, fingerprint string) int {
	var i int
	if n := len(sh.free); n > 0 {
		i = int(sh.free[n-1])
		sh.free = sh.free[:n-1]
	} else {
		sh.slots = append(sh.slots, memSlot{})
		i = len(sh.slots) - 1
	}
	sl := &sh.slots[i]
	*sl = memSlot{hash: h, next: sh.index[h], used: true}
	sh.index[h] = uint32(i + 1)
	sh.writeIdentity(sl, scope, key, fingerprint)
	return i
}

// writeIdentity writes sl's identity region anew at the arena's end.
func (sh *memShard) writeIdentity(sl *memSlot, scope Scope, key, fingerprint string) {
	sh.dead += sl.idLen()
	sl.idOff = len(sh.arena)
	sl.keyLen, sl.principalLen, sl.methodLen, sl.routeLen, sl.fp = uint32(len(key)),
		uint32(len(scope.Principal)), uint32(len(scope.Method)), uint32(len(scope.Route)), uint32(len(fingerprint))
	sh.arena = append(sh.arena, key...)
	sh.arena = append(sh.arena, scope.Principal...)
	sh.arena = append(sh.arena, scope.Method...)
	sh.arena = append(sh.arena, scope.Route...)
	sh.arena = append(sh.arena, fingerprint...)
}

// setResponse stores r, encoded, as sl's response.
func (sh *memShard) setResponse(sl *memSlot, r Response) {
	sh.dropResponse(sl)
	sl.respOff = len(sh.arena)
	sh.arena = appendResponse(sh.arena, r)
	sl.respLen = uint32(len(sh.arena) - sl.respOff)
}

// dropResponse forgets sl's response.
func (sh *memShard) dropResponse(sl *memSlot) {
	sh.dead += int(sl.respLen)
	sl.respOff, sl.respLen = 0, 0
}

// remove deletes the record in slot i.
func (sh *memShard) remove(i int) {
	sl := &sh.slots[i]
	if head := sh.index[sl.hash]; head == uint32(i+1) {
		if sl.next == 0 {
			delete(sh.index, sl.hash)
		} else {
			sh.index[sl.hash] = sl.next
		}
	} else {
		for j := head; j != 0; j = sh.slots[j-1].next {
			if prev := &sh.slots[j-1]; prev.next == uint32(i+1) {
				prev.next = sl.next
				break
			}
		}
	}
	sh.dead += sl.idLen() + int(sl.respLen)
	*sl = memSlot{}
	sh.free = append(sh.free, uint32(i))
}

// memArenaSlack is how many dead bytes a part keeps before compact
// rewrites its arena: small parts are not rewritten for every delete.
const memArenaSlack = 64 << 10

// compact rewrites the arena without its dead bytes once they are more
// than half of it, so the arena stays within twice what its records use
// and each live byte is copied a bounded number of times per byte
// written. Callers hold sh's lock.
func (sh *memShard) compact() {
	if sh.dead <= memArenaSlack || 2*sh.dead <= len(sh.arena) {
		return
	}
	live := len(sh.arena) - sh.dead
	arena := make([]byte, 0, live+live/4)
	for i := range sh.slots {
		sl := &sh.slots[i]
		if !sl.used {
			continue
		}
		n := sl.idLen()
		off := len(arena)
		arena = append(arena, sh.arena[sl.idOff:sl.idOff+n]...)
		sl.idOff = off
		if sl.respLen > 0 {
			off = len(arena)
			arena = append(arena, sh.response(sl)...)
			sl.respOff = off
		}
	}
	sh.arena, sh.dead = arena, 0
	if len(sh.free) > len(sh.slots)/2 {
		sh.shrinkSlots()
	}
}

// shrinkSlots drops the free slots at the end of the slot slice, after a
// sweep deleted most of a part, and returns the slice's spare memory.
func (sh *memShard) shrinkSlots() {
	n := len(sh.slots)
	for n > 0 && !sh.slots[n-1].used {
		n--
	}
	if n == len(sh.slots) {
		return
	}
	sh.slots = append([]memSlot(nil), sh.slots[:n]...)
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
	sh.index, sh.slots, sh.free, sh.arena, sh.dead = nil, nil, nil, nil, 0
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
	if resp, err := decodeResponse(sh.response(sl)); err == nil {
		rec.Response = &resp
	}
	return rec
}
