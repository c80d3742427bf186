package keystore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

var _ QuickDeferrer = (*Bolt)(nil)

// deferredSet holds the deferred writes of a Bolt that are not committed
// yet, so reads in this process see them at once.
type deferredSet struct {
	mu    sync.Mutex
	data  map[string]*deferredWrite // key -> latest uncommitted write
	timer *time.Timer               // armed while writes wait for a commit
	err   error                     // first deferred write that failed
}

// deferredWrite is one encoded record waiting for a commit.
type deferredWrite struct{ data []byte }

// UpdateDeferred is Update whose write joins the next group commit
// without waiting for its fdatasync: another write's commit, or one of
// its own once BoltOptions.DeferDelay has passed with none, and at the
// latest Close. Until then the record reads back changed in this process
// only, and a crash loses the write (see Deferrer). Update's checks run
// at once against the record as this process sees it, and again in the
// commit; a write the commit refuses (a concurrent writer changed the
// record) is dropped and reported by Close.
func (b *Bolt) UpdateDeferred(ctx context.Context, r *Record) error {
	_, err := b.updateDeferred(ctx, r, false)
	return err
}

// TryUpdateDeferred implements QuickDeferrer: UpdateDeferred when its
// checks can be made against a record this process holds (one created
// with AdoptCreate, or deferred, and not written since) and no lock is
// held by a call that may be doing I/O. Otherwise it does nothing and
// reports done false.
func (b *Bolt) TryUpdateDeferred(ctx context.Context, r *Record) (done bool, err error) {
	return b.updateDeferred(ctx, r, true)
}

// updateDeferred is UpdateDeferred; with quick, it gives up (done false,
// nothing changed) rather than read the file or wait for a lock.
func (b *Bolt) updateDeferred(ctx context.Context, r *Record, quick bool) (done bool, err error) {
	if err := checkWrite(ctx, "update", r); err != nil {
		return true, err
	}
	if err := b.refuseWrite(); err != nil {
		return true, err
	}
	if quick {
		// Close holds closeMu while it commits and folds: that is I/O.
		if !b.closeMu.TryRLock() {
			return false, nil
		}
		if b.closed {
			b.closeMu.RUnlock()
			return true, ErrClosed
		}
		defer b.closeMu.RUnlock()
	} else {
		release, err := b.enter()
		if err != nil {
			return true, err
		}
		defer release()
	}
	d := &b.deferred
	if quick {
		// Another deferred write may hold d.mu while it reads the file.
		if !d.mu.TryLock() {
			return false, nil
		}
	} else {
		d.mu.Lock()
	}
	defer d.mu.Unlock()
	// Checked under d.mu, so two deferred writes of one key queue in the
	// order they were checked.
	cur, ok := d.data[r.Key]
	var sum recordSummary
	switch adopted := b.adopted.get(r.Key); {
	case ok:
		sum, err = decodeSummary(r.Key, cur.data)
	case adopted != nil:
		// No write since its create: the file holds this record.
		sum = recordSummary{Name: adopted.Name, State: adopted.State}
	case quick:
		return false, nil
	default:
		sum, err = b.storedSummary(r.Key)
	}
	if err != nil {
		return true, err
	}
	if sum.Name != r.Name {
		return true, nameChanged(r.Key, sum.Name, r.Name)
	}
	if !mayRewrite(sum.State, r.State) {
		return true, settled(r.Key, sum.State, r.State)
	}
	data, err := encodeRecord(r)
	if err != nil {
		return true, err
	}
	b.adopted.drop(r.Key)
	w := &deferredWrite{data: data}
	if d.data == nil {
		d.data = map[string]*deferredWrite{}
	}
	d.data[r.Key] = w
	key := r.Key
	b.writes.enqueue(b.updateApply(r.Key, r.Name, r.State, data), func(err error) { b.committed(key, w, err) })
	if d.timer == nil {
		d.timer = time.AfterFunc(b.deferDelay, b.flushDeferred)
	}
	return true, nil
}

// storedSummary reads the summary of the record stored under key.
func (b *Bolt) storedSummary(key string) (recordSummary, error) {
	data, err := b.readStored(key)
	if err != nil {
		return recordSummary{}, fmt.Errorf("update: %w", err)
	}
	return decodeSummary(key, data)
}

// committed is told the outcome of deferred write w of key: reads go to
// the file again, unless a later deferred write of key is waiting.
func (b *Bolt) committed(key string, w *deferredWrite, err error) {
	d := &b.deferred
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.data[key] == w {
		delete(d.data, key)
	}
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("keystore: deferred update of %s lost: %w", keyRef(key), err)
	}
}

// dropDeferred forgets the deferred write of key, once a later Update of
// key has committed (after it, since deferred writes queue first).
func (b *Bolt) dropDeferred(key string) {
	d := &b.deferred
	d.mu.Lock()
	delete(d.data, key)
	d.mu.Unlock()
}

// deferredRecord returns the deferred write of key decoded, or nil.
func (b *Bolt) deferredRecord(key string) (*Record, error) {
	d := &b.deferred
	d.mu.Lock()
	w := d.data[key]
	d.mu.Unlock()
	if w == nil {
		return nil, nil
	}
	return decodeRecord(key, w.data)
}

// deferredSnapshot returns the deferred writes waiting now, by key.
func (b *Bolt) deferredSnapshot() map[string][]byte {
	d := &b.deferred
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.data) == 0 {
		return nil
	}
	out := make(map[string][]byte, len(d.data))
	for k, w := range d.data {
		out[k] = w.data
	}
	return out
}

// flushDeferred commits the deferred writes no other write has taken
// along in the meantime.
func (b *Bolt) flushDeferred() {
	release, err := b.enter()
	if err != nil {
		return // Close flushed them
	}
	defer release()
	d := &b.deferred
	d.mu.Lock()
	d.timer = nil
	waiting := len(d.data) > 0
	d.mu.Unlock()
	if waiting {
		b.writes.flush()
	}
}

// closeDeferred commits the deferred writes before Close closes the file,
// and reports the first deferred write that was lost. The caller holds
// closeMu for writing, so no write is in flight.
func (b *Bolt) closeDeferred() error {
	d := &b.deferred
	d.mu.Lock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.mu.Unlock()
	b.writes.flush()
	d.mu.Lock()
	defer d.mu.Unlock()
	err := d.err
	if len(d.data) > 0 && err == nil {
		err = errors.New("keystore: deferred updates left uncommitted at close")
	}
	return err
}

// overlay returns rec as this process sees it, given the deferred writes
// snapshot taken before rec was read: a write committed since then is
// in the snapshot still.
func overlay(rec *Record, snap map[string][]byte) (*Record, error) {
	if data, ok := snap[rec.Key]; ok {
		return decodeRecord(rec.Key, data)
	}
	return rec, nil
}
