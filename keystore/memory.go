package keystore

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Memory is a Store that keeps records in process memory: nothing survives
// the process. It suits tests and programs that need no resume after a
// restart. Each record is held encoded in one pointer-free byte slice
// (the collector need not walk it) and decoded on every read, so a caller
// never shares a map or slice with the store. The one exception is a
// record handed over by AdoptCreate (Adopter): it is kept as it is until
// its first update replaces it by an encoding, so that a record begun and
// then settled is encoded once, and GetShared (Sharer) hands it out
// without a copy. Get and List still return copies of it.
type Memory struct {
	mu      sync.RWMutex
	closed  bool
	records map[string]memEntry // by key
	names   map[string]string   // name -> key
	// scoped maps a business name to the names scoped by a principal
	// (ScopedName) it is stored under, for Namesakes.
	scoped map[string][]string
	// principalKey is the key of the principal fingerprint
	// (PrincipalKeyKeeper), nil until a client asks for it.
	principalKey []byte
	// runs holds the saga runs (RunKeeper), by id.
	runs map[string]*Run
}

var (
	_ Store       = (*Memory)(nil)
	_ Adopter     = (*Memory)(nil)
	_ NonBlocking = (*Memory)(nil)
	_ Sharer      = (*Memory)(nil)
)

// WritesNeverBlock reports true: a write only encodes the record and
// takes m's lock, which no call holds across I/O (see NonBlocking).
func (m *Memory) WritesNeverBlock() bool { return true }

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{
		records: make(map[string]memEntry),
		names:   make(map[string]string),
		scoped:  make(map[string][]string),
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
	existing, created, err := m.create(r, encodeMemRecord(r))
	if created {
		existing = r.Clone()
	}
	return existing, created, err
}

// AdoptCreate is Create without the copy handed back: it returns r itself
// as existing when it creates the record (see Adopter). m keeps r itself,
// not an encoding, until an update replaces it: the caller never modifies
// it again, and a record that is settled soon after (Begin, then Do) is
// encoded once, by that update. Only the records adopted and not updated
// since are walked by the collector.
func (m *Memory) AdoptCreate(ctx context.Context, r *Record) (*Record, bool, error) {
	if err := checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	return m.create(r, memEntry{memHead: headOf(r), live: r})
}

// create stores an encoding of owned unless its name is taken (then it
// returns a copy of that record) or its key is.
//
// The caller encodes owned into e, outside the lock and outside this
// frame: the write runs on a fresh goroutine, whose small stack the two
// frames together would make grow on every call.
func (m *Memory) create(owned *Record, e memEntry) (*Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	if owned.Name != "" {
		if key, ok := m.names[owned.Name]; ok {
			return m.records[key].record()
		}
	}
	if _, ok := m.records[owned.Key]; ok {
		return nil, false, fmt.Errorf("%w: %s", ErrDuplicateKey, keyRef(owned.Key))
	}
	m.records[owned.Key] = e
	if owned.Name != "" {
		m.names[owned.Name] = owned.Key
		m.indexScoped(owned.Name, owned.Principal)
	}
	return owned, true, nil
}

// Get returns a copy of the record with this key, or ErrNotFound.
func (m *Memory) Get(ctx context.Context, key string) (*Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, err := m.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	rec, _, err := e.record()
	return rec, err
}

// GetShared is Get without the copy of a record kept as AdoptCreate handed
// it over (see Sharer): that record itself is returned, and the caller must
// not modify it. Any other record is decoded, as Get does.
func (m *Memory) GetShared(ctx context.Context, key string) (*Record, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e, err := m.entry(ctx, key)
	if err != nil {
		return nil, err
	}
	if e.live != nil {
		return e.live, nil
	}
	return decodeMemRecord(e)
}

// entry is the stored entry under key, or why there is none to read.
// Callers hold m.mu.
func (m *Memory) entry(ctx context.Context, key string) (memEntry, error) {
	if err := ctx.Err(); err != nil {
		return memEntry{}, err
	}
	if m.closed {
		return memEntry{}, ErrClosed
	}
	e, ok := m.records[key]
	if !ok {
		return memEntry{}, fmt.Errorf("%w: %s", ErrNotFound, keyRef(key))
	}
	return e, nil
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
	rec, _, err := m.records[key].record()
	return rec, err
}

// Update replaces the stored record with r.Key by a copy of r. It returns
// ErrNotFound if there is none, an error if r.Name differs from the
// stored name (a name belongs to its intent for life), and ErrSettled if
// it would change a settled record into another state (see Store).
func (m *Memory) Update(ctx context.Context, r *Record) error {
	if err := checkWrite(ctx, "update", r); err != nil {
		return err
	}
	return m.update(r, encodeMemRecord(r))
}

// AdoptUpdate is Update: m keeps its own encoding of r either way (see
// Adopter).
func (m *Memory) AdoptUpdate(ctx context.Context, r *Record) error {
	if err := checkWrite(ctx, "update", r); err != nil {
		return err
	}
	return m.update(r, encodeMemRecord(r))
}

// update replaces the stored record with an encoding of owned.
// The caller encodes it into e (see create).
func (m *Memory) update(owned *Record, e memEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	old, ok := m.records[owned.Key]
	if !ok {
		return fmt.Errorf("update: %w: %s", ErrNotFound, keyRef(owned.Key))
	}
	if old.name != owned.Name {
		return nameChanged(owned.Key, old.name, owned.Name)
	}
	if !mayRewrite(old.state, owned.State) && !m.goneRewrite(old, owned.State) {
		return settled(owned.Key, old.state, owned.State)
	}
	m.records[owned.Key] = e
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
	for _, e := range m.records {
		if len(f.States) > 0 && !slices.Contains(f.States, e.state) {
			continue // no decode for a record the filter drops anyway
		}
		r, err := e.decode()
		if err != nil {
			return nil, err
		}
		if f.matches(r) {
			out = append(out, r)
		}
	}
	sortOldestFirst(out)
	return out, nil
}

// Close drops every record. Later calls, Close included, return ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	m.records, m.names, m.scoped = nil, nil, nil
	return nil
}

// record decodes e for a caller, with the results of a create that found
// the name taken.
func (e memEntry) record() (*Record, bool, error) {
	r, err := e.decode()
	return r, false, err
}

// decode returns a copy of the record e holds: of the adopted record
// itself, or decoded from its encoding.
func (e memEntry) decode() (*Record, error) {
	if e.live != nil {
		return e.live.Clone(), nil
	}
	return decodeMemRecord(e)
}

// goneRewrite reports whether old, a record mayRewrite refuses to turn
// into to, is a Failed one whose operation was gone, which may become
// Succeeded (Record.OperationGone).
func (m *Memory) goneRewrite(old memEntry, to State) bool {
	if !mayRewriteGone(old.state, to) {
		return false
	}
	r, err := old.decode()
	return err == nil && r.OperationGone()
}
