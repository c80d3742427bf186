package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errStoreClosed is returned by every MemoryStore call after Close.
var errStoreClosed = errors.New("server: memory store is closed")

// MemoryStore is a Store held in process memory, guarded by one mutex:
// every method runs as one critical section, which makes Reserve an atomic
// create-if-absent and Complete/Release a compare-and-set on the token.
// What goes in is copied in and what comes out is copied out, so callers
// never share the store's memory. Nothing survives the process.
type MemoryStore struct {
	now   func() time.Time
	grace time.Duration // how long a reservation outlives its lease

	mu      sync.Mutex
	closed  bool
	records map[Scope]map[string]memRecord // scope → key → record
}

// memoryConfig holds MemoryStore options.
type memoryConfig struct {
	now   func() time.Time
	grace time.Duration
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

// NewMemoryStore returns an empty in-memory Store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	cfg := memoryConfig{now: time.Now, grace: DefaultReservationGrace}
	for _, opt := range opts {
		opt(&cfg)
	}
	return &MemoryStore{
		now:     cfg.now,
		grace:   cfg.grace,
		records: make(map[Scope]map[string]memRecord),
	}
}

var _ Store = (*MemoryStore)(nil)

// lock takes the mutex unless ctx is done or the store is closed; on nil
// error the caller must unlock.
func (s *MemoryStore) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errStoreClosed
	}
	return nil
}

// Reserve implements Store. An expired lease is taken over only by a
// request with the same fingerprint: a different payload under the key is
// a reused key whatever the record's state, and the record is returned.
func (s *MemoryStore) Reserve(ctx context.Context, scope Scope, key, fingerprint string, lease time.Duration) (*Reservation, *Record, error) {
	if key == "" || fingerprint == "" {
		return nil, nil, errors.New("server: reserve needs a key and a fingerprint")
	}
	if lease <= 0 {
		return nil, nil, fmt.Errorf("server: lease must be positive, got %v", lease)
	}
	if err := s.lock(ctx); err != nil {
		return nil, nil, err
	}
	defer s.mu.Unlock()

	byKey := s.records[scope]
	if byKey == nil {
		byKey = make(map[string]memRecord)
		s.records[scope] = byKey
	}
	now := s.now()
	if existing, ok := byKey[key]; ok && !reservable(existing, fingerprint, now) {
		return nil, existing.record(scope, key), nil
	}
	token := newFencingToken()
	byKey[key] = memRecord{
		fingerprint: fingerprint,
		token:       token,
		createdAt:   now,
		deadline:    now.Add(lease),
	}
	return &Reservation{Scope: scope, Key: key, Fingerprint: fingerprint, Token: token}, nil, nil
}

// reservable reports whether a new request may take over rec at now: a
// completed record past its retention, or a reservation past its lease
// when the payload is the same.
func reservable(rec memRecord, fingerprint string, now time.Time) bool {
	if rec.completed {
		return !now.Before(rec.deadline)
	}
	return !now.Before(rec.deadline) && rec.fingerprint == fingerprint
}

// Complete implements Store.
func (s *MemoryStore) Complete(ctx context.Context, c Completion) error {
	if err := validateCompletion(c); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	rec, err := s.owned(c.Reservation)
	if err != nil {
		return err
	}
	s.complete(rec, c)
	return nil
}

// Release implements Store.
func (s *MemoryStore) Release(ctx context.Context, r Reservation) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if _, err := s.owned(r); err != nil {
		return err
	}
	s.delete(r.Scope, r.Key)
	return nil
}

// Sweep implements Store: it deletes up to limit completed records past
// their retention and reservations abandoned for longer than the grace.
func (s *MemoryStore) Sweep(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("server: sweep limit must be positive, got %d", limit)
	}
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	now := s.now()
	deleted := 0
	for scope, byKey := range s.records {
		for key, rec := range byKey {
			if deleted == limit {
				return deleted, nil
			}
			if s.sweepable(rec, now) {
				s.delete(scope, key)
				deleted++
			}
		}
	}
	return deleted, nil
}

// delete removes a record, and its scope's map once empty. Callers hold
// mu.
func (s *MemoryStore) delete(scope Scope, key string) {
	byKey := s.records[scope]
	delete(byKey, key)
	if len(byKey) == 0 {
		delete(s.records, scope)
	}
}

// sweepable reports whether Sweep may delete rec at now.
func (s *MemoryStore) sweepable(rec memRecord, now time.Time) bool {
	if rec.completed {
		return !now.Before(rec.deadline)
	}
	return !now.Before(rec.deadline.Add(s.grace))
}

// owned returns the record r's token owns, or ErrFenced. Callers hold mu.
func (s *MemoryStore) owned(r Reservation) (memRecord, error) {
	rec, ok := s.records[r.Scope][r.Key]
	if !ok || rec.completed || r.Token == "" || rec.token != r.Token {
		return memRecord{}, ErrFenced
	}
	return rec, nil
}

// complete stores rec, the record c's reservation owns, as the completed
// record of c. Callers hold mu and have checked the token with owned.
func (s *MemoryStore) complete(rec memRecord, c Completion) {
	rec.completed = true
	rec.token = ""
	rec.deadline = s.now().Add(c.Retention)
	rec.response = encodeResponse(c.Response)
	s.records[c.Reservation.Scope][c.Reservation.Key] = rec
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
// transaction as the key: effect runs under the store's lock, only while
// c's token owns the key (ErrFenced otherwise, and effect never runs),
// and the key is completed only if effect returns nil. effect must not
// call the store. A handler calls it with the completion of its Held
// reservation, then Held.MarkCompleted.
func (s *MemoryStore) CompleteFunc(ctx context.Context, c Completion, effect func() error) error {
	if err := validateCompletion(c); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	rec, err := s.owned(c.Reservation)
	if err != nil {
		return err
	}
	if err := effect(); err != nil {
		return err
	}
	s.complete(rec, c)
	return nil
}

// Close implements Store. Later calls fail; closing twice is harmless.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.records = nil
	return nil
}

// newFencingToken returns 128 random bits in hex. crypto/rand never fails
// on supported platforms (it aborts the program rather than return weak
// bytes), so there is no error to handle.
func newFencingToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var text [2 * len(b)]byte
	hex.Encode(text[:], b[:])
	return string(text[:])
}

// Lookup returns the record of (scope, key), or nil when there is none:
// what a retry would find, for tests and diagnostics.
func (s *MemoryStore) Lookup(ctx context.Context, scope Scope, key string) (*Record, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rec, ok := s.records[scope][key]
	if !ok {
		return nil, nil
	}
	return rec.record(scope, key), nil
}
