package keystore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The log: Create appends a new record to bucketLog under a time-ordered
// id (the time, a sequence number, then the key), so the records of one
// group commit share the last leaf pages whatever their keys. Random keys
// put straight into bucketRecords would dirty about one page each; that
// cost is paid in bulk instead, when the log is folded into bucketRecords
// (at Close, before a Purge, and when it reaches foldAt records), where
// many records share each commit and its fdatasyncs, and records of one
// leaf page share its rewrite. A record's key in
// the log is the suffix of its id, so the index from key to id, kept in
// memory, is rebuilt at open from the ids alone.
var bucketLog = []byte("log") // time-ordered id + key -> encoded Record

// logFillPercent is how full bbolt packs the log's pages when they split.
// Its default, half full, suits inserts anywhere in a tree; the log is
// appended to at its end, where a half-full page is never filled again,
// so each commit would write twice the pages its records need.
const logFillPercent = 1.0

// logBucket is tx's log bucket, packed for appending (see logFillPercent).
func logBucket(tx *bolt.Tx) *bolt.Bucket {
	lb := tx.Bucket(bucketLog)
	if lb != nil {
		lb.FillPercent = logFillPercent
	}
	return lb
}

// logIDPrefix is the length of an id's time and sequence number.
const logIDPrefix = 16

// defaultFoldAt is the log size that starts a fold in the background: the
// bigger, the fewer pages each folded record costs, and the more memory
// the index takes (about 100 bytes a record).
const defaultFoldAt = 1 << 16

// defaultFoldBatch is how many records one fold transaction moves (see
// bolt_fold.go): writers wait for at most one such transaction, 20–50 ms
// on a virtio disk. Smaller ones commit fewer pages per fdatasync (256:
// a tenth less throughput under load, for half the wait).
const defaultFoldBatch = 1 << 10

// logIndex maps the keys of the records in the log to their ids.
type logIndex struct {
	seq atomic.Uint64

	mu  sync.Mutex
	ids map[string][]byte // committed
	// gen counts folds; a read that misses rereads once if it changed.
	gen atomic.Uint64

	// tx holds the ids written by the batch transaction the leader runs;
	// only the leader touches it.
	tx map[string][]byte

	folding atomic.Bool
}

// newLogID returns a fresh id for key.
func (l *logIndex) newLogID(key string) []byte {
	id := make([]byte, logIDPrefix, logIDPrefix+len(key))
	binary.BigEndian.PutUint64(id, uint64(time.Now().UnixNano()))
	binary.BigEndian.PutUint64(id[8:], l.seq.Add(1))
	return append(id, key...)
}

// logKeyOf is the key of the record stored under log id.
func logKeyOf(id []byte) string { return string(id[logIDPrefix:]) }

// committed returns the id of key in the log, or nil. An id is published
// before its transaction commits (see publish), so a reader that finds a
// committed name or key also finds its id; one that finds the id first
// finds no record under it until the commit, and reads on as if there
// were no id.
func (l *logIndex) committed(key string) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids[key]
}

// publish records the id a Create writes in the leader's transaction.
func (l *logIndex) publish(key string, id []byte) {
	l.mu.Lock()
	l.ids[key] = id
	l.mu.Unlock()
	l.tx[key] = id
}

// beginTx withdraws the ids of a transaction that did not commit (the
// batch runs again without its failed ops, or its commit failed).
func (l *logIndex) beginTx() {
	if len(l.tx) == 0 {
		return
	}
	l.mu.Lock()
	for k, id := range l.tx {
		if string(l.ids[k]) == string(id) {
			delete(l.ids, k)
		}
	}
	l.mu.Unlock()
	clear(l.tx)
}

// committedTx keeps the ids of a transaction that committed.
func (l *logIndex) committedTx() { clear(l.tx) }

// size is the number of records in the log.
func (l *logIndex) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.ids)
}

// loadLog builds b's log index from the ids in the log bucket.
func (b *Bolt) loadLog() error {
	b.log.ids = map[string][]byte{}
	b.log.tx = map[string][]byte{}
	b.writes.beginTx, b.writes.committedTx = b.log.beginTx, b.afterCommit
	return b.view(func(tx *bolt.Tx) error {
		clear(b.log.ids)
		lb := tx.Bucket(bucketLog)
		if lb == nil {
			return nil // a version 1 file opened read-only: no log yet
		}
		c := lb.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) <= logIDPrefix {
				continue // never written so; List names it
			}
			b.log.ids[logKeyOf(k)] = append([]byte(nil), k...)
		}
		return nil
	})
}

// afterCommit publishes a commit's log ids and starts a fold when the log
// has grown to foldAt.
func (b *Bolt) afterCommit() {
	b.log.committedTx()
	b.foldIfGrown()
}

// locate returns where the record with key is stored in tx: its log id in
// the log bucket, or key in the records bucket. id is the log id the
// caller found for key, nil for none.
func locate(tx *bolt.Tx, key string, id []byte) (*bolt.Bucket, []byte) {
	if id != nil {
		if lb := logBucket(tx); lb.Get(id) != nil {
			return lb, id
		}
	}
	return tx.Bucket(bucketRecords), []byte(key)
}

// readStored returns a copy of the stored form of the record with key, in
// a read transaction, wherever it is stored. A fold that moves it during
// the read makes the read run again, so a stored record is never missed.
func (b *Bolt) readStored(key string) ([]byte, error) {
	for {
		gen := b.log.gen.Load()
		var data []byte
		err := b.view(func(tx *bolt.Tx) error {
			bucket, loc := locate(tx, key, b.log.committed(key))
			v := bucket.Get(loc)
			if v == nil {
				return fmt.Errorf("%w: %s", ErrNotFound, keyRef(key))
			}
			data = append([]byte(nil), v...)
			return nil
		})
		if errors.Is(err, ErrNotFound) && b.log.gen.Load() != gen {
			continue
		}
		return data, err
	}
}
