package keystore

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is a Store that keeps records in process memory: nothing survives
// the process. It suits tests and programs that need no resume after a
// restart. Records go in and come out as deep copies, so a caller never
// shares a map or slice with the store; a caller that hands over records
// it never touches again saves the copies on the way in with Adopter.
type Memory struct {
	mu      sync.RWMutex
	closed  bool
	records map[string]*Record // by key
	names   map[string]string  // name -> key
}

var (
	_ Store   = (*Memory)(nil)
	_ Adopter = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		records: make(map[string]*Record),
		names:   make(map[string]string),
	}
}

// Create stores a copy of r. If r.Name is non-empty and a record with that
// name exists, it returns a copy of that record and created=false and
// stores nothing. On success existing is a copy of the stored record, so it
// is never nil when err is nil. A key already stored is ErrDuplicateKey.
func (m *Memory) Create(ctx context.Context, r *Record) (*Record, bool, error) {
	if err := checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	existing, created, err := m.create(r.Clone())
	if created {
		existing = r.Clone()
	}
	return existing, created, err
}

// AdoptCreate is Create without the copies: m keeps r itself, and returns
// it as existing when it creates the record (see Adopter).
func (m *Memory) AdoptCreate(ctx context.Context, r *Record) (*Record, bool, error) {
	if err := checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	return m.create(r)
}

// create stores owned, a record no caller modifies, unless its name is
// taken (then it returns a copy of that record) or its key is.
func (m *Memory) create(owned *Record) (*Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	if owned.Name != "" {
		if key, ok := m.names[owned.Name]; ok {
			return m.records[key].Clone(), false, nil
		}
	}
	if _, ok := m.records[owned.Key]; ok {
		return nil, false, fmt.Errorf("%w: %s", ErrDuplicateKey, keyRef(owned.Key))
	}
	m.records[owned.Key] = owned
	if owned.Name != "" {
		m.names[owned.Name] = owned.Key
	}
	return owned, true, nil
}

// Get returns a copy of the record with this key, or ErrNotFound.
func (m *Memory) Get(ctx context.Context, key string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	r, ok := m.records[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, keyRef(key))
	}
	return r.Clone(), nil
}

// GetByName returns a copy of the record with this name, or ErrNotFound.
func (m *Memory) GetByName(ctx context.Context, name string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	key, ok := m.names[name]
	if !ok || name == "" {
		return nil, fmt.Errorf("%w: name %q", ErrNotFound, name)
	}
	return m.records[key].Clone(), nil
}

// Update replaces the stored record with r.Key by a copy of r. It returns
// ErrNotFound if there is none, an error if r.Name differs from the
// stored name (a name belongs to its intent for life), and ErrSettled if
// it would change a settled record into another state (see Store).
func (m *Memory) Update(ctx context.Context, r *Record) error {
	if err := checkWrite(ctx, "update", r); err != nil {
		return err
	}
	return m.update(r.Clone())
}

// AdoptUpdate is Update without the copy: m keeps r itself (see Adopter).
func (m *Memory) AdoptUpdate(ctx context.Context, r *Record) error {
	if err := checkWrite(ctx, "update", r); err != nil {
		return err
	}
	return m.update(r)
}

// update replaces the stored record with owned, a record no caller
// modifies.
func (m *Memory) update(owned *Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	old, ok := m.records[owned.Key]
	if !ok {
		return fmt.Errorf("update: %w: %s", ErrNotFound, keyRef(owned.Key))
	}
	if old.Name != owned.Name {
		return nameChanged(owned.Key, old.Name, owned.Name)
	}
	if !mayRewrite(old.State, owned.State) {
		return settled(owned.Key, old.State, owned.State)
	}
	m.records[owned.Key] = owned
	return nil
}

// List returns copies of the records matching f, oldest first.
func (m *Memory) List(ctx context.Context, f Filter) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []*Record
	for _, r := range m.records {
		if f.matches(r) {
			out = append(out, r.Clone())
		}
	}
	sortOldestFirst(out)
	return out, nil
}

// Purge removes settled records as PurgeRequest.Action says: deleted, or
// replaced by their tombstones. Pending and Accepted records stay.
func (m *Memory) Purge(ctx context.Context, p PurgeRequest) (PurgeResult, error) {
	var res PurgeResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return res, ErrClosed
	}
	now := time.Now()
	for key, r := range m.records {
		switch p.Action(r) {
		case PurgeTombstone:
			m.records[key] = r.Tombstone(now)
			res.Tombstoned++
		case PurgeDelete:
			delete(m.records, key)
			if r.Name != "" {
				delete(m.names, r.Name)
			}
			res.Deleted++
		}
	}
	return res, nil
}

// Close drops every record. Later calls, Close included, return ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.records, m.names = nil, nil
	return nil
}
