package testserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/idemkit/idem/server"
)

// errStoreClosed is returned by every MemoryStore payments call after
// Close.
var errStoreClosed = errors.New("testserver: memory store is closed")

// MemoryStore is a Store held in process memory: the idempotency records
// in a server.MemoryStore, the payments and operations beside them. An
// effect with a completion is inserted inside server.MemoryStore's
// CompleteFunc, so the two commit together or not at all. What goes in is
// copied in and what comes out is copied out. Nothing survives the
// process.
//
// Payments and operations are never purged, so they are bounded too: the
// store holds at most as many of them together as its records
// (server.WithCapacity, default server.DefaultMaxRecords), then refuses
// new ones with server.ErrStoreFull, answered 503 with Retry-After like
// a full record store; what it holds stays readable and replayable.
type MemoryStore struct {
	*server.MemoryStore

	mu         sync.Mutex
	closed     bool
	objects    int // payments and operations held
	maxObjects int
	payments   map[string]map[string]storedPayment // principal → id → payment
	operations map[string]map[string]Operation     // principal → id → operation
	seq        uint64                              // insertion order, a tie-break for equal times
}

type storedPayment struct {
	payment Payment
	seq     uint64
}

// NewMemoryStore returns an empty in-memory Store.
func NewMemoryStore(opts ...MemoryOption) *MemoryStore {
	records := server.NewMemoryStore(opts...)
	maxObjects, _ := records.Capacity()
	return &MemoryStore{
		MemoryStore: records,
		maxObjects:  maxObjects,
		payments:    make(map[string]map[string]storedPayment),
		operations:  make(map[string]map[string]Operation),
	}
}

var _ Store = (*MemoryStore)(nil)

// lock takes the payments mutex unless ctx is done or the store is
// closed; on nil error the caller must unlock.
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

// CreatePayment implements Store.
func (s *MemoryStore) CreatePayment(ctx context.Context, p Payment, c *Completion) error {
	if p.ID == "" {
		return errors.New("testserver: payment needs an id")
	}
	return s.insertWithCompletion(ctx, c, func() error {
		byID := s.payments[p.Principal]
		if _, dup := byID[p.ID]; dup {
			return fmt.Errorf("testserver: payment %q already exists", p.ID)
		}
		if byID == nil {
			byID = make(map[string]storedPayment)
			s.payments[p.Principal] = byID
		}
		s.seq++
		byID[p.ID] = storedPayment{payment: p, seq: s.seq}
		return nil
	})
}

// CreateOperation implements Store.
func (s *MemoryStore) CreateOperation(ctx context.Context, op Operation, c *Completion) error {
	if op.ID == "" {
		return errors.New("testserver: operation needs an id")
	}
	return s.insertWithCompletion(ctx, c, func() error {
		byID := s.operations[op.Principal]
		if _, dup := byID[op.ID]; dup {
			return fmt.Errorf("testserver: operation %q already exists", op.ID)
		}
		if byID == nil {
			byID = make(map[string]Operation)
			s.operations[op.Principal] = byID
		}
		byID[op.ID] = op
		return nil
	})
}

// insertWithCompletion runs insert under the payments lock and, when c is
// non-nil, inside CompleteFunc: the key is completed only if the insert
// succeeds, and nothing is inserted if the token no longer owns the key.
// A full store refuses the insert with server.ErrStoreFull.
func (s *MemoryStore) insertWithCompletion(ctx context.Context, c *Completion, insert func() error) error {
	locked := func() error {
		if err := s.lock(ctx); err != nil {
			return err
		}
		defer s.mu.Unlock()
		if s.objects >= s.maxObjects {
			return fmt.Errorf("testserver: %d payments and operations held: %w", s.objects, ErrStoreFull)
		}
		if err := insert(); err != nil {
			return err
		}
		s.objects++
		return nil
	}
	if c == nil {
		return locked()
	}
	return s.MemoryStore.CompleteFunc(ctx, *c, locked)
}

// GetPayment implements Store.
func (s *MemoryStore) GetPayment(ctx context.Context, principal, id string) (Payment, error) {
	if err := s.lock(ctx); err != nil {
		return Payment{}, err
	}
	defer s.mu.Unlock()
	sp, ok := s.payments[principal][id]
	if !ok {
		return Payment{}, ErrNotFound
	}
	return sp.payment, nil
}

// ListPayments implements Store. Payments created at the same instant are
// ordered newest insertion first.
func (s *MemoryStore) ListPayments(ctx context.Context, principal string) ([]Payment, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	stored := make([]storedPayment, 0, len(s.payments[principal]))
	for _, sp := range s.payments[principal] {
		stored = append(stored, sp)
	}
	s.mu.Unlock()

	slices.SortFunc(stored, func(a, b storedPayment) int {
		if c := b.payment.Created.Compare(a.payment.Created); c != 0 {
			return c
		}
		return cmp.Compare(b.seq, a.seq)
	})
	out := make([]Payment, len(stored))
	for i, sp := range stored {
		out[i] = sp.payment
	}
	return out, nil
}

// CountPayments implements Store.
func (s *MemoryStore) CountPayments(ctx context.Context) (int, error) {
	if err := s.lock(ctx); err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	n := 0
	for _, byID := range s.payments {
		n += len(byID)
	}
	return n, nil
}

// GetOperation implements Store.
func (s *MemoryStore) GetOperation(ctx context.Context, principal, id string) (Operation, error) {
	if err := s.lock(ctx); err != nil {
		return Operation{}, err
	}
	defer s.mu.Unlock()
	op, ok := s.operations[principal][id]
	if !ok {
		return Operation{}, ErrNotFound
	}
	return op, nil
}

// Close implements Store. Later calls fail; closing twice is harmless.
func (s *MemoryStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.payments = nil
	s.operations = nil
	s.mu.Unlock()
	return s.MemoryStore.Close()
}
