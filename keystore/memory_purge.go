package keystore

import (
	"context"
	"time"
)

// memHead is what Memory keeps of a record beside its encoding: the
// fields its checks read (name, state) and those a Purge decides by, so
// that a purge passes over the records it keeps without decoding them.
type memHead struct {
	name  string
	state State
	// created and updated are CreatedAt and UpdatedAt (instant);
	// purged says the record is a tombstone.
	created, updated int64
	purged           bool
}

// headOf is the memHead of r.
func headOf(r *Record) memHead {
	return memHead{name: r.Name, state: r.State,
		created: instant(r.CreatedAt), updated: instant(r.UpdatedAt), purged: !r.Purged.IsZero()}
}

// memPurgeBatch is how many records one hold of Memory's write lock
// purges: a purge of a large store never holds up its writers for long.
const memPurgeBatch = 1024

// memPurgeCheck is how many records a purge looks at between two looks
// at its context.
const memPurgeCheck = 4096

// Purge removes settled records as PurgeRequest.Action says: deleted, or
// replaced by their tombstones. Pending and Accepted records stay. It
// finds the records to purge under the read lock, from the fields kept
// beside each encoding (only a Failed one is decoded, to tell whether its
// operation was gone), then purges them memPurgeBatch at a time under the
// write lock, deciding again on each as it is then. It stops at ctx's end
// with what it purged so far and ctx's error.
func (m *Memory) Purge(ctx context.Context, p PurgeRequest) (PurgeResult, error) {
	var res PurgeResult
	due, err := m.purgeDue(ctx, p)
	if err != nil {
		return res, err
	}
	for len(due) > 0 {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		n := min(len(due), memPurgeBatch)
		if err := m.purgeKeys(due[:n], p, &res); err != nil {
			return res, err
		}
		due = due[n:]
	}
	return res, nil
}

// purgeDue lists the keys of the records p purges now.
func (m *Memory) purgeDue(ctx context.Context, p PurgeRequest) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	var due []string
	seen := 0
	for key, e := range m.records {
		if seen++; seen%memPurgeCheck == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		act, err := e.purgeAction(p)
		if err != nil {
			return nil, err
		}
		if act != PurgeKeep {
			due = append(due, key)
		}
	}
	return due, nil
}

// purgeKeys purges the records of keys that p purges, adding to res.
func (m *Memory) purgeKeys(keys []string, p PurgeRequest, res *PurgeResult) error {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for _, key := range keys {
		e, ok := m.records[key]
		if !ok {
			continue
		}
		act, err := e.purgeAction(p)
		if err != nil {
			return err
		}
		switch act {
		case PurgeTombstone:
			r, err := e.decode()
			if err != nil {
				return err
			}
			m.records[key] = encodeMemRecord(r.Tombstone(now))
			res.Tombstoned++
		case PurgeDelete:
			if e.name != "" {
				// The principal is in the encoding alone: only named
				// records are indexed by it.
				r, err := e.decode()
				if err != nil {
					return err
				}
				delete(m.names, e.name)
				m.unindexScoped(e.name, r.Principal)
			}
			delete(m.records, key)
			res.Deleted++
		}
	}
	return nil
}

// purgeAction is PurgeRequest.Action for the record e holds, decoding it
// only when the answer depends on more than its head: a Failed record
// whose operation may have been gone.
func (e memEntry) purgeAction(p PurgeRequest) (PurgeAction, error) {
	if !p.IncludeUnknown && e.state == Failed {
		r, err := e.decode()
		if err != nil {
			return PurgeKeep, err
		}
		return p.Action(r), nil
	}
	return p.actionAt(e.state, e.name != "", e.created, e.updated, e.purged), nil
}
