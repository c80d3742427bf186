package keystore

import (
	"context"
	"fmt"
)

var _ RunKeeper = (*Memory)(nil)

// PutRun implements RunKeeper.
func (m *Memory) PutRun(ctx context.Context, r *Run) error {
	if err := CheckRun(ctx, r); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	var stored uint64
	if old, ok := m.runs[r.ID]; ok {
		stored = old.Version
	}
	if r.Version != stored+1 {
		return runVersionError(r.ID, stored, r.Version)
	}
	if m.runs == nil {
		m.runs = make(map[string]*Run)
	}
	m.runs[r.ID] = r.Clone()
	return nil
}

// GetRun implements RunKeeper.
func (m *Memory) GetRun(ctx context.Context, id string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	r, ok := m.runs[id]
	if !ok {
		return nil, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	return r.Clone(), nil
}

// ListRuns implements RunKeeper.
func (m *Memory) ListRuns(ctx context.Context) ([]*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	out := make([]*Run, 0, len(m.runs))
	for _, r := range m.runs {
		out = append(out, r.Clone())
	}
	sortRunsOldestFirst(out)
	return out, nil
}
