package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	mrand "math/rand/v2"
	"sync/atomic"
	"time"
)

// errStoreClosed is returned by every MemoryStore call after Close.
var errStoreClosed = errors.New("server: memory store is closed")

// memShardCount is how many independently locked parts a MemoryStore is
// split into. A sweep holds one part's lock at a time, so a request waits
// at most for the examination of one part, 1/256th of the store, and
// requests on different parts never wait for each other.
const memShardCount = 256

// MemoryStore is a Store held in process memory. Its records are split by
// (scope, key) hash into parts, each guarded by its own mutex: every
// method on a key runs as one critical section of its part, which makes
// Reserve an atomic create-if-absent and Complete/Release a
// compare-and-set on the token. What goes in is copied in and what comes
// out is copied out, so callers never share the store's memory. Nothing
// survives the process.
//
// The store is bounded (WithCapacity): when it holds as many records, or
// as many bytes, as allowed, a Reserve of a new key first reclaims the
// records of its part that are due (see Sweep), and if none are, fails
// with ErrStoreFull, which the middleware answers 503 with Retry-After.
// An unexpired completion is never dropped to make room, and a retry of
// a key the store holds is answered as ever, full or not. Near full
// (the last eighth of either bound) a principal's new key is admitted
// only within its fair share, so one principal's flood cannot lock the
// others out; the refusal is a *StoreFullError whose RetryAfter is the
// time until that principal's earliest record is due.
type MemoryStore struct {
	now        func() time.Time
	loc        *time.Location // the clock's: records hold unix times, handed out in it
	grace      time.Duration  // how long a reservation outlives its lease
	maxRecords int64
	maxBytes   int64
	seed       maphash.Seed

	count atomic.Int64 // records held
	bytes atomic.Int64 // their memRecordSize total

	tenants *memTenants // each principal's records, for fair shares
	// fullDue caches when the store's earliest record is due, for the
	// Retry-After of a full store, and fullDueAt when it was read (unix
	// nanoseconds of the store's clock): it is read at most once a second.
	fullDue, fullDueAt atomic.Int64

	sweepCursor atomic.Uint32  // the part the next Sweep starts at
	sweepWanted chan struct{}  // signalled when a Reserve was refused for room
	sweepHook   func(part int) // tests: called by Sweep holding a part's lock

	shards [memShardCount]memShard

	hashHook func(Scope, string) uint64 // tests: replaces memHash, to force collisions

	watchers keyWatchers // requests waiting for a key's original (WatchKey)
}

// ErrStoreFull means the store holds as many records or bytes as it may,
// none of them due for deletion: a new key was refused, and nothing ran.
// Retries of keys the store holds are still answered. The middleware
// answers it 503 /store-unavailable with Retry-After.
var ErrStoreFull = errors.New("server: idempotency store is full")

// Default bounds of a MemoryStore (WithCapacity).
const (
	// DefaultMaxRecords is how many records a MemoryStore holds at most:
	// about a day of 12 requests a second at the default retention.
	DefaultMaxRecords = 1 << 20
	// DefaultMaxBytes bounds the memory a MemoryStore's records take, as
	// estimated by the store (keys, fingerprints and stored responses,
	// plus a fixed cost per record).
	DefaultMaxBytes = 1 << 30
)

// memoryConfig holds MemoryStore options.
type memoryConfig struct {
	now        func() time.Time
	grace      time.Duration
	maxRecords int64
	maxBytes   int64
}

// MemoryOption configures a MemoryStore.
type MemoryOption func(*memoryConfig)

// WithClock makes the store read time from now instead of time.Now, so
// tests can drive leases and retention with a fake clock. A nil now keeps
// time.Now.
func WithClock(now func() time.Time) MemoryOption {
	return func(c *memoryConfig) {
		if now != nil {
			c.now = now
		}
	}
}

// WithReservationGrace sets how long the store keeps a reservation after
// its lease ended (default DefaultReservationGrace) before Sweep deletes
// it as abandoned. Until then a retry with the same payload can take it
// over. A non-positive d keeps the default.
func WithReservationGrace(d time.Duration) MemoryOption {
	return func(c *memoryConfig) {
		if d > 0 {
			c.grace = d
		}
	}
}

// WithCapacity bounds the store to maxRecords records and maxBytes bytes
// of records (defaults DefaultMaxRecords and DefaultMaxBytes; a
// non-positive value keeps its default). The bounds are checked when a
// new key is reserved: a completion is always stored, so the byte total
// may pass maxBytes by the responses of the reservations in flight.
func WithCapacity(maxRecords int, maxBytes int64) MemoryOption {
	return func(c *memoryConfig) {
		if maxRecords > 0 {
			c.maxRecords = int64(maxRecords)
		}
		if maxBytes > 0 {
			c.maxBytes = maxBytes
		}
	}
}

// NewMemoryStore returns an empty in-memory Store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	cfg := memoryConfig{now: time.Now, grace: DefaultReservationGrace, maxRecords: DefaultMaxRecords, maxBytes: DefaultMaxBytes}
	for _, opt := range opts {
		opt(&cfg)
	}
	s := &MemoryStore{
		now:         cfg.now,
		loc:         cfg.now().Location(),
		grace:       cfg.grace,
		maxRecords:  cfg.maxRecords,
		maxBytes:    cfg.maxBytes,
		seed:        maphash.MakeSeed(),
		sweepWanted: make(chan struct{}, 1),
		tenants:     newMemTenants(),
	}
	s.fullDueAt.Store(math.MinInt64)
	for i := range s.shards {
		s.shards[i].tokens = newTokenSource()
		s.shards[i].cur = -1
	}
	return s
}

// newTokenSource returns a generator of fencing tokens: ChaCha8, a
// cryptographically strong generator, seeded from crypto/rand. Each part
// draws from its own under its lock, without the system call crypto/rand
// may make per token. crypto/rand never fails on supported platforms (it
// aborts the program rather than return weak bytes), so there is no error
// to handle.
func newTokenSource() *mrand.ChaCha8 {
	var seed [32]byte
	_, _ = rand.Read(seed[:])
	return mrand.NewChaCha8(seed)
}

var _ Store = (*MemoryStore)(nil)

// shardOf returns the part holding (scope, key) and the hash it is
// indexed by there.
func (s *MemoryStore) shardOf(scope Scope, key string) (*memShard, uint64) {
	h := s.memHash(scope, key)
	return &s.shards[h%memShardCount], h
}

// memHash is the 64-bit seeded hash of (scope, key) that picks its part
// and indexes it there.
func (s *MemoryStore) memHash(scope Scope, key string) uint64 {
	if s.hashHook != nil {
		return s.hashHook(scope, key)
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(key)
	h.WriteByte(0)
	h.WriteString(scope.Principal)
	h.WriteByte(0)
	h.WriteString(scope.Method)
	h.WriteByte(0)
	h.WriteString(scope.Route)
	return h.Sum64()
}

// lock takes sh's mutex unless ctx is done or the store is closed; on nil
// error the caller must unlock.
func (sh *memShard) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sh.mu.Lock()
	if sh.closed {
		sh.mu.Unlock()
		return errStoreClosed
	}
	return nil
}

// Reserve implements Store. An expired lease is taken over only by a
// request with the same fingerprint: a different payload under the key is
// a reused key whatever the record's state, and the record is returned.
// A new key is refused with ErrStoreFull when the store is full.
func (s *MemoryStore) Reserve(ctx context.Context, scope Scope, key, fingerprint string, lease time.Duration) (*Reservation, *Record, error) {
	if key == "" || fingerprint == "" {
		return nil, nil, errors.New("server: reserve needs a key and a fingerprint")
	}
	if lease <= 0 {
		return nil, nil, fmt.Errorf("server: lease must be positive, got %v", lease)
	}
	if len(key)+len(fingerprint)+len(scope.Principal)+len(scope.Method)+len(scope.Route) > maxMemRegion {
		return nil, nil, errors.New("server: key, fingerprint and scope too long for the memory store")
	}
	sh, h := s.shardOf(scope, key)
	if err := sh.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer sh.mu.Unlock()

	now := s.now()
	nowNs := unixNano(now)
	i := sh.find(h, scope, key)
	if i >= 0 && !s.reservable(sh, sh.slot(i), fingerprint, nowNs) {
		return nil, sh.record(sh.slot(i), scope, key, s.loc), nil
	}
	size := memRecordSize(scope, key, fingerprint, true, 0)
	var before memTally
	if i >= 0 {
		sl := sh.slot(i)
		before = s.tally(sl)
		s.bytes.Add(size - sl.size())
		if string(sh.fingerprint(sl)) != fingerprint {
			sh.writeIdentity(sl, scope, key, fingerprint)
		}
		sh.dropResponse(sl)
		sh.compact()
	} else if err := s.admit(sh, scope.Principal, size, nowNs); err != nil {
		return nil, nil, err
	} else {
		i = sh.insert(h, scope, key, fingerprint)
	}
	sl := sh.slot(i)
	sl.completed = false
	sh.newFencingToken(&sl.token)
	sl.createdAt = nowNs
	sl.deadline = addNanos(nowNs, lease)
	sh.noteDue(s.dueAt(sl))
	s.retally(sh, sl, before)
	return &Reservation{Scope: scope, Key: key, Fingerprint: fingerprint, Token: sl.tokenText()}, nil, nil
}

// admit counts a new record of principal of size bytes in, or returns a
// *StoreFullError when there is no room for it, or the store is near full
// and principal holds its fair share (fairShare), even after sh's due
// records are reclaimed. Callers hold sh's lock.
func (s *MemoryStore) admit(sh *memShard, principal string, size int64, now int64) error {
	if s.fairShare(principal, size) && s.take(size) {
		return nil
	}
	if (!sh.dueKnown || reached(now, sh.nextDue)) && s.reclaim(sh, now, -1) > 0 &&
		s.fairShare(principal, size) && s.take(size) {
		return nil
	}
	select { // ask the sweeper to reclaim the other parts now
	case s.sweepWanted <- struct{}{}:
	default:
	}
	return s.refusal(principal, size, now)
}

// take counts one record of size bytes in if both bounds allow it.
func (s *MemoryStore) take(size int64) bool {
	if s.count.Add(1) > s.maxRecords {
		s.count.Add(-1)
		return false
	}
	if s.bytes.Add(size) > s.maxBytes {
		s.bytes.Add(-size)
		s.count.Add(-1)
		return false
	}
	return true
}

// SweepWanted is signalled when the store refused a new key for want of
// room: RunSweeper then sweeps at once instead of at its next interval.
func (s *MemoryStore) SweepWanted() <-chan struct{} { return s.sweepWanted }

// reservable reports whether a new request may take over sl at now: a
// completed record past its retention, or a reservation past its lease
// when the payload is the same.
func (s *MemoryStore) reservable(sh *memShard, sl *memSlot, fingerprint string, now int64) bool {
	if sl.completed {
		return reached(now, sl.deadline)
	}
	return reached(now, sl.deadline) && string(sh.fingerprint(sl)) == fingerprint
}

// Complete implements Store.
func (s *MemoryStore) Complete(ctx context.Context, c Completion) error {
	return s.CompleteFunc(ctx, c, nil)
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, r Reservation) error {
	sh, h := s.shardOf(r.Scope, r.Key)
	if err := sh.lock(ctx); err != nil {
		return err
	}
	defer sh.mu.Unlock()
	i, err := owned(sh, h, r)
	if err != nil {
		return err
	}
	s.delete(sh, i)
	sh.compact()
	s.watchers.notify(r.Scope, r.Key)
	return nil
}

// Sweep implements Store: it deletes up to limit completed records past
// their retention and reservations abandoned for longer than the grace.
// It works through the store one part at a time, holding only that
// part's lock, and the next call starts where this one stopped.
func (s *MemoryStore) Sweep(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("server: sweep limit must be positive, got %d", limit)
	}
	start := int(s.sweepCursor.Load())
	deleted := 0
	for i := range memShardCount {
		part := (start + i) % memShardCount
		sh := &s.shards[part]
		if err := sh.lock(ctx); err != nil {
			return deleted, err
		}
		if s.sweepHook != nil {
			s.sweepHook(part)
		}
		deleted += s.reclaim(sh, unixNano(s.now()), limit-deleted)
		sh.mu.Unlock()
		if deleted == limit {
			s.sweepCursor.Store(uint32(part)) // it may hold more
			return deleted, nil
		}
		s.sweepCursor.Store(uint32((part + 1) % memShardCount))
	}
	return deleted, nil
}

// reclaim deletes up to limit (all when negative) of sh's records that
// are due at now and returns how many it deleted. A scan that sees the
// whole part learns when its next record becomes due. Callers hold sh's
// lock.
func (s *MemoryStore) reclaim(sh *memShard, now int64, limit int) int {
	deleted := 0
	defer sh.compact()
	var next int64
	known := false
	for i := range sh.nslots {
		sl := sh.slot(i)
		if !sl.used {
			continue
		}
		if deleted == limit {
			return deleted
		}
		due := s.dueAt(sl)
		if reached(now, due) {
			s.delete(sh, i)
			deleted++
		} else if !known || due < next {
			next, known = due, true
		}
	}
	sh.nextDue, sh.dueKnown = next, known
	return deleted
}

// delete removes the record in slot i. Callers hold sh's lock.
func (s *MemoryStore) delete(sh *memShard, i int) {
	sl := sh.slot(i)
	s.count.Add(-1)
	s.bytes.Add(-sl.size())
	s.tenants.change(sh.principalOf(sl), -1, -sl.size(), s.dueAt(sl), true, 0, false)
	sh.remove(i)
}

// dueAt is when Sweep may delete sl: the end of a completed record's
// retention, or of a reservation's lease plus the grace.
func (s *MemoryStore) dueAt(sl *memSlot) int64 {
	if sl.completed {
		return sl.deadline
	}
	return addNanos(sl.deadline, s.grace)
}

// owned returns the slot of the record r's token owns, or ErrFenced.
// Callers hold the lock of sh, r's part, and h is the hash of r's key.
func owned(sh *memShard, h uint64, r Reservation) (int, error) {
	i := sh.find(h, r.Scope, r.Key)
	if i < 0 || sh.slot(i).completed || !sh.slot(i).ownedBy(r.Token) {
		return -1, ErrFenced
	}
	return i, nil
}

// complete stores c's response in slot i, the record c's reservation
// owns. Callers hold the lock of sh, its part, and have checked the token
// with owned. The byte bound is not checked: a completion is never
// refused for room.
func (s *MemoryStore) complete(sh *memShard, i int, c Completion, size int) {
	sl := sh.slot(i)
	tally := s.tally(sl)
	before := sl.size()
	sl.completed = true
	sl.token = [16]byte{}
	sl.deadline = addNanos(unixNano(s.now()), c.Retention)
	sh.setResponse(sl, c.Response, size)
	sh.noteDue(sl.deadline)
	s.bytes.Add(sl.size() - before)
	s.retally(sh, sl, tally)
	sh.compact()
}

// validateCompletion rejects a completion the memory store cannot hold.
// Expiries are time.Time values, so any positive retention is kept.
func validateCompletion(c Completion) error {
	if err := ValidateCompletion(c, time.Nanosecond); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// CompleteFunc runs effect and completes c's reservation in one atomic
// step, the memory store's form of committing an effect in the same
// transaction as the key: effect runs under the lock of the key's part,
// only while c's token owns the key (ErrFenced otherwise, and effect
// never runs), and the key is completed only if effect returns nil.
// effect must not call the store. A nil effect completes the key alone.
// A handler calls it with the completion of its Held reservation, then
// Held.MarkCompleted.
func (s *MemoryStore) CompleteFunc(ctx context.Context, c Completion, effect func() error) error {
	if err := validateCompletion(c); err != nil {
		return err
	}
	size := encodedResponseLen(c.Response)
	if size > maxMemRegion {
		return fmt.Errorf("server: a response of %d bytes is too large for the memory store", size)
	}
	sh, h := s.shardOf(c.Reservation.Scope, c.Reservation.Key)
	if err := sh.lock(ctx); err != nil {
		return err
	}
	defer sh.mu.Unlock()
	i, err := owned(sh, h, c.Reservation)
	if err != nil {
		return err
	}
	if effect != nil {
		if err := effect(); err != nil {
			return err
		}
	}
	s.complete(sh, i, c, size)
	s.watchers.notify(c.Reservation.Scope, c.Reservation.Key)
	return nil
}

// WatchKey implements KeyWatcher.
func (s *MemoryStore) WatchKey(scope Scope, key string) (<-chan struct{}, func()) {
	return s.watchers.watch(scope, key)
}

// Close implements Store. Later calls fail; closing twice is harmless.
func (s *MemoryStore) Close() error {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.closed = true
		sh.reset()
		sh.mu.Unlock()
	}
	s.tenants.reset()
	return nil
}

// newFencingToken fills token with 128 random bits from sh's generator;
// the store hands it out in hex. Callers hold sh's lock.
func (sh *memShard) newFencingToken(token *[16]byte) {
	_, _ = sh.tokens.Read(token[:]) // never fails
}

// Lookup returns the record of (scope, key), or nil when there is none:
// what a retry would find, for tests and diagnostics.
func (s *MemoryStore) Lookup(ctx context.Context, scope Scope, key string) (*Record, error) {
	sh, h := s.shardOf(scope, key)
	if err := sh.lock(ctx); err != nil {
		return nil, err
	}
	defer sh.mu.Unlock()
	i := sh.find(h, scope, key)
	if i < 0 {
		return nil, nil
	}
	return sh.record(sh.slot(i), scope, key, s.loc), nil
}

// Capacity returns the store's bounds, as WithCapacity set them.
func (s *MemoryStore) Capacity() (maxRecords int, maxBytes int64) {
	return int(s.maxRecords), s.maxBytes
}

// Usage returns how many records the store holds and their size in bytes
// as the capacity bounds count them.
func (s *MemoryStore) Usage() (records int, bytes int64) {
	return int(s.count.Load()), s.bytes.Load()
}
