package server

import (
	"encoding/hex"
	"math"
	"time"
)

// memSlot is how a MemoryStore part holds one record, and it holds no
// pointer: a store that keeps every key for a day holds millions of
// records, and every pointer in them is work for every garbage
// collection. The slots of a part are blocks of a slice, its index (memIndex) a
// table of hashes and slot numbers, and the variable-length bytes (scope,
// key, fingerprint, stored response) are regions of the part's arena
// chunks: none of them holds a pointer, so the collector never scans
// them.
type memSlot struct {
	hash      uint64 // memHash of (scope, key), its key in the part's index
	used      bool
	completed bool
	token     [16]byte // the owner's fencing token while reserved
	createdAt int64    // unix nanoseconds
	// deadline (unix nanoseconds) is when the lease ends while reserved,
	// and when the retention ends once completed.
	deadline int64

	// The identity region (key, principal, method, route and
	// fingerprint, one after the other) and the response region (the
	// stored answer, encodeResponse, once completed), each at an offset
	// in one of the part's arena chunks.
	id, resp                                      memRegion
	keyLen, principalLen, methodLen, routeLen, fp uint32
}

// memRecordOverhead is what a record costs beyond its strings and
// response, for the store's byte bound: its slot, its index entry and
// their spare room, rounded up.
const memRecordOverhead = 192

// memTokenLen is the length of a fencing token as text.
const memTokenLen = 32

// memRegion is where a record's bytes are: n bytes at off in chunk.
type memRegion struct{ chunk, off, n uint32 }

// maxMemRegion bounds the identity and the encoded response of a record,
// so their lengths fit a region's fields.
const maxMemRegion = math.MaxUint32

// memRecordSize is the memory a record of (scope, key) with fingerprint
// and a response of respLen bytes is counted as taking; a reservation
// counts its token too. The scope is counted with every record although
// records of one scope could share it: the bound errs on the safe side.
func memRecordSize(scope Scope, key, fingerprint string, reserved bool, respLen int) int64 {
	n := memRecordOverhead + len(key) + len(scope.Principal) + len(scope.Method) + len(scope.Route) + len(fingerprint) + respLen
	if reserved {
		n += memTokenLen
	}
	return int64(n)
}

// size is what sl is counted as taking: memRecordSize of its record.
func (sl *memSlot) size() int64 {
	n := memRecordOverhead + int(sl.id.n) + int(sl.resp.n)
	if !sl.completed {
		n += memTokenLen
	}
	return int64(n)
}

// unixNano is t in unix nanoseconds, saturated to the int64 range (years
// 1678 to 2262).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(minUnixTime):
		return math.MinInt64
	case t.After(maxUnixTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minUnixTime = time.Unix(0, math.MinInt64)
	maxUnixTime = time.Unix(0, math.MaxInt64)
)

// addNanos is t+d saturated to the int64 range: a retention of centuries
// ends in 2262.
// reached reports whether now is at or past t. A time saturated at the top
// of the range (beyond 2262) is never reached: a clock there saturates too,
// and the two would compare equal, making a record set to outlive it due
// at once.
func reached(now, t int64) bool {
	return t != math.MaxInt64 && now >= t
}

func addNanos(t int64, d time.Duration) int64 {
	if d > 0 && t > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	if d < 0 && t < math.MinInt64-int64(d) {
		return math.MinInt64
	}
	return t + int64(d)
}

// tokenText is the fencing token as the store hands it out.
func (sl *memSlot) tokenText() string {
	var text [memTokenLen]byte
	hex.Encode(text[:], sl.token[:])
	return string(text[:])
}

// ownedBy reports whether token is sl's fencing token, compared as the
// exact text the store handed out.
func (sl *memSlot) ownedBy(token string) bool {
	if len(token) != memTokenLen {
		return false
	}
	var text [memTokenLen]byte
	hex.Encode(text[:], sl.token[:])
	return string(text[:]) == token
}
