package server

import (
	"container/heap"
	"fmt"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Fair shares of a full MemoryStore. A store filled by one principal
// would refuse every other principal's new keys until the records are
// due, up to the whole retention: an unexpired completion is never
// dropped to make room. So the last part of each bound is kept for
// principals below their fair share, and a principal past it is refused
// first.
const (
	// memFairReserveDiv: the last 1/8 of the records bound, and of the
	// bytes bound, is taken only by principals below their share.
	memFairReserveDiv = 8
	// memFairMinBytes is the least byte share of a principal, so a share
	// of the bytes never refuses a principal its first records.
	memFairMinBytes = 64 << 10
	// MaxStoreFullRetryAfter caps the Retry-After of a refused new key.
	MaxStoreFullRetryAfter = 15 * time.Minute
	// memTenantStripes is how many independently locked parts the
	// per-principal counts are split into.
	memTenantStripes = 64
)

// StoreFullError is the ErrStoreFull a MemoryStore returns: the store
// (or, near full, this principal's share of it) has no room for a new
// key, none of the records that would make room is due, and nothing ran.
// The middleware answers it 503 /store-unavailable with RetryAfter.
type StoreFullError struct {
	// Share is true when the store is near full and the principal holds
	// its fair share: the rest is kept for other principals.
	Share bool
	// Records and Bytes are what the principal holds.
	Records int64
	Bytes   int64
	// RetryAfter is the time until the earliest record that would make
	// room is due (the principal's own when Share), at least a second and
	// at most MaxStoreFullRetryAfter.
	RetryAfter time.Duration
}

func (e *StoreFullError) Error() string {
	if e.Share {
		return fmt.Sprintf("server: idempotency store is near full and this principal holds its fair share (%d records, %d bytes); "+
			"its new keys are refused until one of its records is due, in %s", e.Records, e.Bytes, e.RetryAfter)
	}
	return fmt.Sprintf("server: idempotency store is full; new keys are refused until a record is due, in %s", e.RetryAfter)
}

// Is matches ErrStoreFull.
func (e *StoreFullError) Is(target error) bool { return target == ErrStoreFull }

// memTenant is what one principal holds in a MemoryStore.
type memTenant struct {
	records int64
	bytes   int64
	due     dueSet
}

// memTenants counts each principal's records and bytes, and when they
// are due, in parts locked apart. A part's lock is taken under a shard's
// lock, never the other way round.
type memTenants struct {
	seed    maphash.Seed
	active  atomic.Int64 // principals holding at least one record
	stripes [memTenantStripes]struct {
		mu sync.Mutex
		m  map[string]*memTenant
		_  [40]byte
	}
}

func newMemTenants() *memTenants {
	t := &memTenants{seed: maphash.MakeSeed()}
	for i := range t.stripes {
		t.stripes[i].m = make(map[string]*memTenant)
	}
	return t
}

// stripe returns the part of the counts of the principal whose hash is
// h, locked.
func (t *memTenants) stripe(h uint64) (map[string]*memTenant, *sync.Mutex) {
	st := &t.stripes[h%memTenantStripes]
	st.mu.Lock()
	return st.m, &st.mu
}

// change moves principal's counts by one record's change: records and
// bytes by dRecords and dBytes, and the record's due time from oldDue
// (none when !hadOld) to newDue (none when !hasNew), in unix
// nanoseconds.
func (t *memTenants) change(principal []byte, dRecords, dBytes int64, oldDue int64, hadOld bool, newDue int64, hasNew bool) {
	m, mu := t.stripe(maphash.Bytes(t.seed, principal))
	defer mu.Unlock()
	tn := m[string(principal)]
	if tn == nil {
		if dRecords <= 0 {
			return // not counted (written before Close reset the counts)
		}
		tn = &memTenant{}
		m[string(principal)] = tn
		t.active.Add(1)
	}
	tn.records += dRecords
	tn.bytes += dBytes
	if hadOld {
		tn.due.remove(dueSecond(oldDue))
	}
	if hasNew {
		tn.due.add(dueSecond(newDue))
	}
	if tn.records <= 0 {
		delete(m, string(principal))
		t.active.Add(-1)
	}
}

// holding returns what principal holds and when its earliest record is
// due (unix nanoseconds; ok false when it holds none).
func (t *memTenants) holding(principal string) (records, bytes, earliest int64, ok bool) {
	m, mu := t.stripe(maphash.String(t.seed, principal))
	defer mu.Unlock()
	tn := m[principal]
	if tn == nil {
		return 0, 0, 0, false
	}
	sec, ok := tn.due.earliest()
	return tn.records, tn.bytes, secondNanos(sec), ok
}

// earliest returns when the store's earliest record is due.
func (t *memTenants) earliest() (int64, bool) {
	best, found := int64(math.MaxInt64), false
	for i := range t.stripes {
		st := &t.stripes[i]
		st.mu.Lock()
		for _, tn := range st.m {
			if sec, ok := tn.due.earliest(); ok && secondNanos(sec) < best {
				best, found = secondNanos(sec), true
			}
		}
		st.mu.Unlock()
	}
	return best, found
}

// reset forgets every count, as Close does.
func (t *memTenants) reset() {
	for i := range t.stripes {
		st := &t.stripes[i]
		st.mu.Lock()
		clear(st.m)
		st.mu.Unlock()
	}
	t.active.Store(0)
}

// dueSecond is the unix second at or after ns: a record is counted due
// no earlier than it is.
func dueSecond(ns int64) int64 {
	sec := ns / int64(time.Second)
	if ns%int64(time.Second) > 0 {
		sec++
	}
	return sec
}

// secondNanos is sec in unix nanoseconds, saturated.
func secondNanos(sec int64) int64 {
	if sec > math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	if sec < math.MinInt64/int64(time.Second) {
		return math.MinInt64
	}
	return sec * int64(time.Second)
}

// dueSet counts records by the second they are due, and finds the
// earliest: a map of counts and a min-heap of its seconds, where a
// second whose count fell to zero is dropped when it reaches the top.
type dueSet struct {
	counts map[int64]int32
	order  secondHeap
}

func (d *dueSet) add(sec int64) {
	if d.counts == nil {
		d.counts = make(map[int64]int32)
	}
	if d.counts[sec] == 0 {
		heap.Push(&d.order, sec)
		if len(d.order) > 2*len(d.counts)+64 {
			d.rebuild()
		}
	}
	d.counts[sec]++
}

func (d *dueSet) remove(sec int64) {
	switch c := d.counts[sec]; {
	case c > 1:
		d.counts[sec] = c - 1
	case c == 1:
		delete(d.counts, sec)
	}
}

func (d *dueSet) earliest() (int64, bool) {
	for len(d.order) > 0 {
		if top := d.order[0]; d.counts[top] > 0 {
			return top, true
		}
		heap.Pop(&d.order)
	}
	return 0, false
}

// rebuild drops the seconds no record is due at any more.
func (d *dueSet) rebuild() {
	d.order = d.order[:0]
	for sec := range d.counts {
		d.order = append(d.order, sec)
	}
	heap.Init(&d.order)
}

// secondHeap is a min-heap of unix seconds.
type secondHeap []int64

func (h secondHeap) Len() int           { return len(h) }
func (h secondHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h secondHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *secondHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *secondHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// memTally is what a record counted for its principal before a change:
// its size and due time; present is false for a record not there yet.
type memTally struct {
	present bool
	size    int64
	due     int64
}

// tally is sl's count for its principal. Callers hold its part's lock.
func (s *MemoryStore) tally(sl *memSlot) memTally {
	return memTally{present: true, size: sl.size(), due: s.dueAt(sl)}
}

// retally moves sl's principal's counts from before to what sl is now.
// Callers hold sh's lock.
func (s *MemoryStore) retally(sh *memShard, sl *memSlot, before memTally) {
	var records int64
	if !before.present {
		records = 1
	}
	s.tenants.change(sh.principalOf(sl), records, sl.size()-before.size, before.due, before.present, s.dueAt(sl), true)
}

// principalOf returns the principal of sl's record, a view of the arena.
func (sh *memShard) principalOf(sl *memSlot) []byte {
	return sh.bytes(sl.id)[sl.keyLen : sl.keyLen+sl.principalLen]
}

// fairShare reports whether principal may take a new record of size
// bytes: always while the store holds less than all but the last
// 1/memFairReserveDiv of either bound; past that only while what it holds
// stays within its fair share, an equal part of each bound among the
// principals holding records, itself included, and one more (the next
// principal to come).
func (s *MemoryStore) fairShare(principal string, size int64) bool {
	if s.count.Load() < s.maxRecords-s.maxRecords/memFairReserveDiv &&
		s.bytes.Load()+size <= s.maxBytes-s.maxBytes/memFairReserveDiv {
		return true
	}
	records, bytes, _, holds := s.tenants.holding(principal)
	sharers := s.tenants.active.Load()
	if !holds {
		sharers++
	}
	shareRecords := max(s.maxRecords/(sharers+1), 1)
	shareBytes := max(s.maxBytes/(sharers+1), memFairMinBytes)
	return records+1 <= shareRecords && bytes+size <= shareBytes
}

// refusal is the *StoreFullError for a new record of principal refused
// at now (unix nanoseconds): past its fair share, with the time until its
// own earliest record is due; else with the time until the store's
// earliest record is due.
func (s *MemoryStore) refusal(principal string, size int64, now int64) error {
	records, bytes, due, holds := s.tenants.holding(principal)
	if holds && !s.fairShare(principal, size) {
		return &StoreFullError{Share: true, Records: records, Bytes: bytes, RetryAfter: storeFullRetryAfter(due, now)}
	}
	if at := s.fullDueAt.Load(); at == math.MinInt64 || now-at >= int64(time.Second) || now < at {
		due, ok := s.tenants.earliest()
		if !ok {
			due = now
		}
		s.fullDue.Store(due)
		s.fullDueAt.Store(now)
	}
	return &StoreFullError{Records: records, Bytes: bytes, RetryAfter: storeFullRetryAfter(s.fullDue.Load(), now)}
}

// storeFullRetryAfter is the time from now until due, in whole seconds,
// at least one and at most MaxStoreFullRetryAfter.
func storeFullRetryAfter(due, now int64) time.Duration {
	if due == math.MaxInt64 || due-now > int64(MaxStoreFullRetryAfter) {
		return MaxStoreFullRetryAfter
	}
	d := time.Duration(due - now)
	if d < time.Second {
		return time.Second
	}
	return (d + time.Second - 1) / time.Second * time.Second
}
