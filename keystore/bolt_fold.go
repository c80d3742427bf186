package keystore

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Folding moves the log's records into bucketRecords (see bolt_log.go),
// oldest first, at most foldBatch records a transaction, each one taken
// between two group commits. The writers that queue meanwhile wait for
// that one transaction alone, never for the whole log: 65536 random keys
// folded in one transaction held every writer for 0.4–0.7 s on a virtio
// disk. A fold moves the records the log held when it began; the ones
// written during it wait for the next fold. A background fold also rests
// after each transaction for as long as the transaction took, so the
// writers keep at least half of the store's write time while it runs,
// unless the log has grown to twice foldAt meanwhile: the fold then runs
// without rest, each of its transactions taking turns with the writers'
// commits, so the log cannot grow without bound.

// fold moves every record the log holds when it begins into
// bucketRecords, one transaction after the other (Close, Purge).
func (b *Bolt) fold() error {
	if b.readOnly {
		return nil // nothing was written; nothing may be
	}
	var last []byte
	for {
		done, _, err := b.foldBatchOf(&last)
		if err != nil || done {
			return err
		}
	}
}

// foldIfGrown starts a fold in the background when the log has reached
// foldAt and none is running. A fold that succeeds looks again once it is
// over: the commits made during it saw it running and started none, so
// without that look a log they grew past foldAt would stay so until the
// next write. A failed fold leaves the rest of the log as it was, for the
// next commit to retry.
func (b *Bolt) foldIfGrown() {
	if b.log.size() < b.foldAt || !b.log.folding.CompareAndSwap(false, true) {
		return
	}
	go func() {
		err := b.foldInBackground()
		b.log.folding.Store(false)
		if err == nil {
			b.foldIfGrown()
		}
	}()
}

// foldInBackground is fold for a store in use: each transaction is
// admitted on its own (enter), so Close waits for one at most, and
// followed by a rest as long as it took. It stops with ErrClosed once the
// store closes; Close folds what is left.
func (b *Bolt) foldInBackground() error {
	var last []byte
	for {
		release, err := b.enter()
		if err != nil {
			return err
		}
		done, took, err := b.foldBatchOf(&last)
		release()
		if err != nil || done {
			return err
		}
		if b.foldPaused != nil {
			b.foldPaused()
		}
		if b.log.size() >= 2*b.foldAt {
			continue // the writers outrun the fold: no rest until it catches up
		}
		rest := time.NewTimer(took)
		select {
		case <-rest.C:
		case <-b.foldStop:
			rest.Stop()
			return ErrClosed
		}
	}
}

// foldBatchOf moves the oldest records of the log, at most foldBatch of
// them and none after the id *last, into bucketRecords in one
// transaction, and reports whether the log holds no record up to *last
// any more, and how long the transaction took. A nil *last is set to the
// log's last id: the end of the fold this transaction begins.
func (b *Bolt) foldBatchOf(last *[]byte) (done bool, took time.Duration, err error) {
	c := b.writes
	c.turn <- struct{}{}
	defer func() { <-c.turn }()
	c.lead() // writes queued before this transaction go first
	if err := b.refuseWrite(); err != nil {
		return false, 0, err
	}
	start := time.Now()
	var moved []string
	err = guard(b.path, func() error {
		return b.db.Update(func(tx *bolt.Tx) error {
			moved = moved[:0]
			var batch []foldEntry
			batch, done = logBatch(logBucket(tx), last, b.foldBatch)
			if len(batch) == 0 {
				return errNoWrites
			}
			return moveBatch(tx, batch, &moved)
		})
	})
	took = time.Since(start)
	if errors.Is(err, errNoWrites) {
		return true, took, nil
	}
	if err == nil {
		err = b.verifyCommit() // the records moved, in the file at the path?
	}
	if err != nil {
		return false, took, fmt.Errorf("keystore: fold log of %s: %w", b.path, err)
	}
	c.commits.Add(1)
	// The generation first: a read that then misses the id retries.
	b.log.gen.Add(1)
	b.log.mu.Lock()
	for _, k := range moved {
		delete(b.log.ids, k)
	}
	if len(b.log.ids) == 0 {
		// A map keeps the room of its largest size: a fresh one gives
		// back what a log of up to twice foldAt ids took.
		b.log.ids = make(map[string][]byte)
	}
	b.log.mu.Unlock()
	return done, took, nil
}

// foldEntry is a log record on its way to bucketRecords: copies, as the
// puts that move it may remap the file.
type foldEntry struct {
	id, key, value []byte
	// last says the log holds nothing after it: the batch empties the log.
	last bool
}

// logBatch reads the oldest records of lb, at most max of them and none
// after *last (set to lb's last id when nil), and reports whether the log
// holds no record up to *last after them.
func logBatch(lb *bolt.Bucket, last *[]byte, max int) ([]foldEntry, bool) {
	cur := lb.Cursor()
	if *last == nil {
		k, _ := cur.Last()
		if k == nil {
			return nil, true
		}
		*last = append([]byte(nil), k...)
	}
	var batch []foldEntry
	k, v := cur.First()
	for ; k != nil && len(batch) < max && bytes.Compare(k, *last) <= 0; k, v = cur.Next() {
		id := append([]byte(nil), k...)
		key := id
		if len(id) > logIDPrefix {
			key = id[logIDPrefix:]
		} // else damage: moved under itself, for List to name
		batch = append(batch, foldEntry{id: id, key: key, value: append([]byte(nil), v...)})
	}
	if len(batch) > 0 && k == nil {
		batch[len(batch)-1].last = true
	}
	return batch, k == nil || bytes.Compare(k, *last) > 0
}

// moveBatch puts batch into bucketRecords and takes it out of the log,
// adding the keys it moved to moved.
func moveBatch(tx *bolt.Tx, batch []foldEntry, moved *[]string) error {
	emptiesLog := batch[len(batch)-1].last
	// In key order, so the puts walk the records bucket once.
	slices.SortFunc(batch, func(a, b foldEntry) int { return bytes.Compare(a.key, b.key) })
	rb := tx.Bucket(bucketRecords)
	for _, e := range batch {
		if err := rb.Put(e.key, e.value); err != nil {
			return err
		}
		*moved = append(*moved, string(e.key))
	}
	if emptiesLog {
		// Dropping the emptied log frees its pages without rewriting
		// them one deletion at a time.
		if err := tx.DeleteBucket(bucketLog); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bucketLog)
		return err
	}
	// The oldest records: the first pages of the log.
	lb := tx.Bucket(bucketLog)
	for _, e := range batch {
		if err := lb.Delete(e.id); err != nil {
			return err
		}
	}
	return nil
}
