package keystore

import (
	"context"
	"fmt"
	"slices"
)

var (
	_ NameScanner = (*Memory)(nil)
	_ Rebinder    = (*Memory)(nil)
)

// indexScoped records that the stored name is a business name scoped by
// principal. Callers hold m.mu for writing.
func (m *Memory) indexScoped(stored, principal string) {
	if principal == "" {
		return
	}
	if business := BusinessName(stored, principal); business != stored {
		m.scoped[business] = append(m.scoped[business], stored)
	}
}

// unindexScoped undoes indexScoped. Callers hold m.mu for writing.
func (m *Memory) unindexScoped(stored, principal string) {
	if principal == "" {
		return
	}
	business := BusinessName(stored, principal)
	if business == stored {
		return
	}
	names := slices.DeleteFunc(m.scoped[business], func(n string) bool { return n == stored })
	if len(names) == 0 {
		delete(m.scoped, business)
		return
	}
	m.scoped[business] = names
}

// Namesakes implements NameScanner: two map reads, and a decode per record
// found.
func (m *Memory) Namesakes(ctx context.Context, name string, limit int) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	if name == "" || limit <= 0 {
		return nil, nil
	}
	var out []*Record
	add := func(stored string) error {
		key, ok := m.names[stored]
		if !ok || len(out) >= limit {
			return nil
		}
		r, err := m.records[key].decode()
		if err != nil {
			return err
		}
		if IsNamesake(r, name) {
			out = append(out, r)
		}
		return nil
	}
	if err := add(name); err != nil {
		return nil, err
	}
	for _, stored := range m.scoped[name] {
		if err := add(stored); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Rebind implements Rebinder.
func (m *Memory) Rebind(ctx context.Context, key, from string, b Binding) (*Record, error) {
	if err := checkRebind(ctx, key, from, b); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if m.names[from] != key {
		return nil, fmt.Errorf("rebind: %w: %s under name %q", ErrNotFound, keyRef(key), from)
	}
	if holder, ok := m.names[b.Name]; ok && b.Name != from && holder != key {
		return nil, fmt.Errorf("rebind %s: %w: %q", keyRef(key), ErrNameTaken, b.Name)
	}
	old, err := m.records[key].decode()
	if err != nil {
		return nil, err
	}
	r := rebound(old, b)
	delete(m.names, from)
	m.unindexScoped(from, old.Principal)
	m.records[key] = encodeMemRecord(r)
	m.names[b.Name] = key
	m.indexScoped(b.Name, b.Principal)
	return r.Clone(), nil
}
