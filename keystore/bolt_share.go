package keystore

import (
	"context"
	"sync"
)

var _ Sharer = (*Bolt)(nil)

// adoptedMax bounds the records a Bolt keeps for GetShared: intents begun
// and not yet written again (a Do usually follows its Begin at once).
const adoptedMax = 1024

// adoptedSet holds the records AdoptCreate took over, by key, until a
// write of their key replaces them, so that the Do after a Begin reads
// the record Begin built instead of decoding the file's copy of it. The
// file holds an encoding of each, committed before it joined the set,
// and no one may modify an adopted record (see Adopter), so the two
// agree. The oldest go first past adoptedMax.
type adoptedSet struct {
	mu    sync.Mutex
	recs  map[string]*adoptedEntry
	order []string // keys in the order they joined; some may have left
}

// adoptedEntry is one adopted record; it is handed out only once its
// create has committed (visible), and only while no write has dropped it.
type adoptedEntry struct {
	rec     *Record
	visible bool
}

// add keeps r, not yet visible, before its create is submitted: a write
// of its key that commits meanwhile drops it, so a record it replaced is
// never made visible.
func (s *adoptedSet) add(r *Record) *adoptedEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs == nil {
		s.recs = make(map[string]*adoptedEntry)
	}
	e := &adoptedEntry{rec: r}
	s.recs[r.Key] = e
	s.order = append(s.order, r.Key)
	for len(s.order) > 1 && (len(s.recs) > adoptedMax || len(s.order) > 2*adoptedMax) {
		if old, ok := s.recs[s.order[0]]; ok && old != e {
			delete(s.recs, s.order[0])
		}
		s.order = s.order[1:]
	}
	return e
}

// settle makes e visible once its create committed, or forgets it when
// the create did not happen; a dropped entry stays dropped.
func (s *adoptedSet) settle(e *adoptedEntry, created bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.recs[e.rec.Key] != e {
		return
	}
	if created {
		e.visible = true
		return
	}
	delete(s.recs, e.rec.Key)
}

// get returns the visible record of key, or nil.
func (s *adoptedSet) get(key string) *Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.recs[key]; e != nil && e.visible {
		return e.rec
	}
	return nil
}

// drop forgets key's record: a write is about to replace it.
func (s *adoptedSet) drop(key string) {
	s.mu.Lock()
	delete(s.recs, key)
	s.mu.Unlock()
}

// clear forgets every record (Purge, Close).
func (s *adoptedSet) clear() {
	s.mu.Lock()
	s.recs, s.order = nil, nil
	s.mu.Unlock()
}

// GetShared implements Sharer: the record AdoptCreate took over, while
// no write has replaced it, else what Get returns.
func (b *Bolt) GetShared(ctx context.Context, key string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if r := b.adopted.get(key); r != nil {
		release, err := b.enter()
		if err != nil {
			return nil, err
		}
		release()
		return r, nil
	}
	return b.Get(ctx, key)
}
