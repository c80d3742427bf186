package keystore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Bolt is the durable Store: one bbolt file, embedded in the process, held
// exclusively (a second process that opens it waits, then gets ErrLocked).
//
// Durability: every method that changes state (Create, Update, Purge)
// returns only after its bbolt transaction has committed, and a bbolt
// commit writes the data pages, fdatasyncs, writes the meta page and
// fdatasyncs again. So a nil error means the change survives a crash of
// the process or of the machine. The exceptions: BoltOptions.NoSync,
// which skips the fdatasyncs and is for tests only; and UpdateDeferred
// (see Deferrer), whose write is seen at once in this process but reaches
// the disk only with the next commit (another write's, its own after
// BoltOptions.DeferDelay, or Close's), so a crash before it loses that
// write and leaves the record as it was stored before.
//
// Group commit: Creates and Updates that arrive while a commit is running
// are folded into the next transaction, so N concurrent writers pay about
// one commit instead of N, while a lone call commits at once with no added
// wait. After a commit of many writes, the next leader that finds only a
// few of those writers back waits for the rest, up to as long as that
// commit took, rather than commit the few alone (a writer left alone
// after a burst waits so once). Each call still gets its own outcome.
//
// Layout: a new record is appended to a log under a time-ordered id, so
// the records of one commit share a few pages whatever their keys (random
// UUIDv4 keys put into a key-ordered B-tree would dirty about one page
// each); the log is folded into the key-ordered records in bulk, at
// Close, before a Purge, and in the background once it holds 65536
// records, 1024 records a transaction, so a writer waits for one such
// transaction at most, never for the whole fold. A fold still dirties
// about one page per record once the records bucket is much bigger than
// the log; purged keystores stay small enough for it to pay. The index from key to log id lives in memory and is
// rebuilt from the log's ids at open. A file of the earlier layout
// (format version 1) is opened in place and marked version 2, which
// builds before the log refuse.
//
// Damage that OpenBolt cannot see (a record that fails its checksum or
// does not decode, a page bbolt cannot read) is reported as ErrCorrupt by
// the call that meets it, never read as a changed record; List and Purge
// pass over a damaged record and name it in a *CorruptRecordsError, and
// the rest of the file stays usable.
type Bolt struct {
	db     *bolt.DB
	path   string
	writes *committer

	// purgeBatch and purgeScan bound the deletions and the records looked
	// at in one Purge transaction, so a long purge never holds the write
	// lock for long.
	purgeBatch, purgeScan int

	// closeMu is held for reading by every call and for writing by Close,
	// so Close waits for calls in flight and later calls see closed.
	closeMu sync.RWMutex
	closed  bool

	// deferred holds UpdateDeferred's writes until a commit takes them;
	// deferDelay is how long they wait for another write's commit.
	deferred   deferredSet
	deferDelay time.Duration

	// log indexes the records not yet folded into bucketRecords (see
	// bolt_log.go); foldAt is the log size that starts a fold, foldBatch
	// the records one fold transaction moves (bolt_fold.go). foldStop,
	// closed by Close, ends a background fold's rest; foldPaused, when
	// set, is called at every rest (tests).
	log        logIndex
	foldAt     int
	foldBatch  int
	foldStop   chan struct{}
	foldPaused func()

	// adopted keeps the records AdoptCreate took over for GetShared
	// (bolt_share.go).
	adopted adoptedSet

	// readOnly: opened with BoltOptions.ReadOnly, every write refused.
	// watch notices the file deleted or replaced (bolt_watch.go); nil
	// for a read-only store, which writes nothing it could lose.
	readOnly bool
	watch    *fileWatch
}

var (
	_ Store   = (*Bolt)(nil)
	_ Adopter = (*Bolt)(nil)
)

// Bounds of one Purge transaction: records deleted, records looked at.
const (
	defaultPurgeBatch = 1000
	defaultPurgeScan  = 10000
)

func newBolt(db *bolt.DB, path string) *Bolt {
	return &Bolt{db: db, path: path, writes: newCommitter(db, path),
		purgeBatch: defaultPurgeBatch, purgeScan: defaultPurgeScan,
		deferDelay: DefaultDeferDelay, foldAt: defaultFoldAt, foldBatch: defaultFoldBatch,
		foldStop: make(chan struct{})}
}

// Path returns the path of the keystore file.
func (b *Bolt) Path() string { return b.path }

// Create stores r unless r.Name is non-empty and a record with that name
// exists: then it returns that record and created=false and writes
// nothing. On success existing is the stored record (a copy of r when
// created), so it is never nil when err is nil. The name check and the key
// check run in the same write transaction as the write, so two concurrent
// Creates of one name store exactly one record. A key already stored is
// ErrDuplicateKey.
func (b *Bolt) Create(ctx context.Context, r *Record) (*Record, bool, error) {
	existing, created, err := b.create(ctx, r, false)
	if created {
		existing = r.Clone()
	}
	return existing, created, err
}

// AdoptCreate is Create without the copy of r returned as existing: the
// file holds an encoding of r, so when it creates the record existing is r
// itself (see Adopter). b keeps r for GetShared until a write of its key.
func (b *Bolt) AdoptCreate(ctx context.Context, r *Record) (existing *Record, created bool, err error) {
	return b.create(ctx, r, true)
}

// create is Create; with adopt, r is kept for GetShared (see adoptedSet).
func (b *Bolt) create(ctx context.Context, r *Record, adopt bool) (existing *Record, created bool, err error) {
	if err := checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, false, err
	}
	defer release()

	// A retried Create of a known name needs no write transaction at all.
	if r.Name != "" {
		rec, err := b.getByName(r.Name)
		if err == nil {
			return rec, false, nil
		}
		if !errors.Is(err, ErrNotFound) {
			return nil, false, err
		}
	}
	data, err := encodeRecord(r)
	if err != nil {
		return nil, false, err
	}
	key, name := []byte(r.Key), []byte(r.Name)
	if adopt {
		entry := b.adopted.add(r)
		defer func() { b.adopted.settle(entry, created) }()
	}
	err = b.writes.submit(ctx, func(tx *bolt.Tx) (bool, error) {
		existing, created = nil, false
		if len(name) > 0 {
			if k := tx.Bucket(bucketNames).Get(name); k != nil {
				rec, err := namedRecord(tx, string(name), string(k), b.log.committed(string(k)))
				existing = rec
				return false, err
			}
		}
		if bucket, loc := locate(tx, r.Key, b.log.committed(r.Key)); bucket.Get(loc) != nil {
			return false, fmt.Errorf("%w: %s", ErrDuplicateKey, keyRef(r.Key))
		}
		id := b.log.newLogID(r.Key)
		if err := logBucket(tx).Put(id, data); err != nil {
			return true, fmt.Errorf("keystore: create %s: %w", keyRef(r.Key), err)
		}
		b.log.publish(r.Key, id)
		if len(name) > 0 {
			if err := tx.Bucket(bucketNames).Put(name, key); err != nil {
				return true, fmt.Errorf("keystore: create %s: index name: %w", keyRef(r.Key), err)
			}
		}
		created = true
		return true, nil
	})
	if err != nil {
		return nil, false, err
	}
	if created {
		return r, true, nil
	}
	if d, err := b.deferredRecord(existing.Key); d != nil || err != nil {
		return d, false, err
	}
	return existing, false, nil
}

// Get returns the record with this key, or ErrNotFound.
func (b *Bolt) Get(ctx context.Context, key string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	// The deferred write first: once it commits it leaves the set, and
	// the file then holds it.
	if rec, err := b.deferredRecord(key); rec != nil || err != nil {
		return rec, err
	}
	data, err := b.readStored(key)
	if err != nil {
		return nil, err
	}
	return decodeRecord(key, data)
}

// GetByName returns the record with this name, or ErrNotFound.
func (b *Bolt) GetByName(ctx context.Context, name string) (*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	return b.getByName(name)
}

// getByName is GetByName for a call already admitted by enter.
func (b *Bolt) getByName(name string) (*Record, error) {
	snap := b.deferredSnapshot() // before the read: see overlay
	for {
		gen := b.log.gen.Load()
		var rec *Record
		err := b.view(func(tx *bolt.Tx) error {
			var key []byte
			if name != "" {
				key = tx.Bucket(bucketNames).Get([]byte(name))
			}
			if key == nil {
				return fmt.Errorf("%w: name %q", ErrNotFound, name)
			}
			var err error
			if rec, err = namedRecord(tx, name, string(key), b.log.committed(string(key))); err != nil {
				return err
			}
			rec, err = overlay(rec, snap)
			return err
		})
		if errors.Is(err, ErrCorrupt) && b.log.gen.Load() != gen {
			continue // a fold moved the record during the read
		}
		return rec, err
	}
}

// Update replaces the stored record with r.Key. It returns ErrNotFound if
// there is none, an error if r.Name differs from the stored name (a name
// belongs to its intent for life), and ErrSettled if it would change a
// settled record into another state (see Store). The checks read the
// stored record in the write transaction itself.
func (b *Bolt) Update(ctx context.Context, r *Record) error {
	if err := checkWrite(ctx, "update", r); err != nil {
		return err
	}
	release, err := b.enter()
	if err != nil {
		return err
	}
	defer release()
	data, err := encodeRecord(r)
	if err != nil {
		return err
	}
	b.adopted.drop(r.Key)
	if err := b.writes.submit(ctx, b.updateApply(r.Key, r.Name, r.State, data)); err != nil {
		return err
	}
	b.dropDeferred(r.Key) // what was deferred for r.Key is older than r
	return nil
}

// updateApply is the write of Update and UpdateDeferred: the checks of
// Update against the stored record, then the write of data.
func (b *Bolt) updateApply(k, name string, state State, data []byte) applyFunc {
	return func(tx *bolt.Tx) (bool, error) {
		records, key := locate(tx, k, b.log.committed(k))
		old := records.Get(key)
		if old == nil {
			return false, fmt.Errorf("update: %w: %s", ErrNotFound, keyRef(k))
		}
		sum, err := decodeSummary(k, old)
		if err != nil {
			return false, err
		}
		if sum.Name != name {
			return false, nameChanged(k, sum.Name, name)
		}
		if !mayRewrite(sum.State, state) && !goneRewrite(k, old, sum.State, state) {
			return false, settled(k, sum.State, state)
		}
		if err := records.Put(key, data); err != nil {
			return true, fmt.Errorf("keystore: update %s: %w", keyRef(k), err)
		}
		return true, nil
	}
}

// AdoptUpdate is Update: b stores an encoding of r and never keeps r, so
// there is no copy to save (see Adopter).
func (b *Bolt) AdoptUpdate(ctx context.Context, r *Record) error {
	return b.Update(ctx, r)
}

// List returns the records matching f, oldest first. Records that cannot
// be decoded (or fail their checksum) are left out and named in a
// *CorruptRecordsError returned with the others: one damaged record
// never hides the sound ones, and is never passed over in silence.
func (b *Bolt) List(ctx context.Context, f Filter) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	var out []*Record
	var damaged CorruptRecords
	snap := b.deferredSnapshot() // before the read: see overlay
	err = b.view(func(tx *bolt.Tx) error {
		out, damaged = nil, CorruptRecords{} // a retried view starts over
		each := func(key string, v []byte) {
			if d, ok := snap[key]; ok {
				v = d
			}
			rec, err := decodeRecord(key, v)
			if err != nil {
				damaged.Add(key, err)
				return
			}
			if f.matches(rec) {
				out = append(out, rec)
			}
		}
		err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			each(string(k), v)
			return nil
		})
		if err != nil {
			return err
		}
		lb := tx.Bucket(bucketLog)
		if lb == nil {
			return nil // a version 1 file opened read-only: no log yet
		}
		return lb.ForEach(func(k, v []byte) error {
			key := string(k)
			if len(k) > logIDPrefix {
				key = logKeyOf(k)
			}
			each(key, v)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sortOldestFirst(out)
	return out, damaged.Err()
}

// Close waits for calls in flight, commits the writes UpdateDeferred left
// waiting, then closes the file and releases its lock. It returns an
// error if a deferred write was lost (its commit refused or failed). Later calls, Close included, return ErrClosed.
func (b *Bolt) Close() error {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.closed = true
	close(b.foldStop)
	b.adopted.clear()
	derr := b.closeDeferred()
	if err := b.fold(); err != nil && derr == nil {
		derr = err // the log stays, read again at the next open
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("keystore: close %s: %w", b.path, err)
	}
	return derr
}

// enter admits a call unless the store is closed; the caller runs release
// when done.
func (b *Bolt) enter() (release func(), err error) {
	b.closeMu.RLock()
	if b.closed {
		b.closeMu.RUnlock()
		return nil, ErrClosed
	}
	return b.closeMu.RUnlock, nil
}

// view runs fn in a read transaction, a damaged file reported as ErrCorrupt.
func (b *Bolt) view(fn func(tx *bolt.Tx) error) error {
	return guard(b.path, func() error { return b.db.View(fn) })
}

// getRecord reads and decodes the record with key, or ErrNotFound; id is
// its log id, nil if none is known.
func getRecord(tx *bolt.Tx, key string, id []byte) (*Record, error) {
	bucket, loc := locate(tx, key, id)
	data := bucket.Get(loc)
	if data == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, keyRef(key))
	}
	return decodeRecord(key, data)
}

// namedRecord reads the record the name index maps name to. The index and
// the records change in the same transactions, so a name without its
// record is damage.
func namedRecord(tx *bolt.Tx, name, key string, id []byte) (*Record, error) {
	rec, err := getRecord(tx, key, id)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: name %q maps to missing record %s", ErrCorrupt, name, keyRef(key))
	}
	return rec, err
}

// Purge removes settled records as PurgeRequest.Action says, deleting
// records and their names or replacing records by their tombstones (which
// keep their names), in transactions of at most a bounded number of
// changes, each committed before the next starts. If ctx ends or a
// transaction fails, the result covers the committed ones. Pending and
// Accepted records are never purged, nor are damaged ones: whether they
// may go cannot be read, so they are left for an operator and named in a
// *CorruptRecordsError returned with the result.
func (b *Bolt) Purge(ctx context.Context, p PurgeRequest) (PurgeResult, error) {
	var total PurgeResult
	release, err := b.enter()
	if err != nil {
		return total, err
	}
	defer release()
	if err := b.refuseWrite(); err != nil {
		return total, err
	}
	b.adopted.clear() // records it replaces must not be handed out again
	// Purge judges bucketRecords: fold the log into it first.
	if err := b.fold(); err != nil {
		return total, err
	}
	var from []byte // first key of the next transaction's scan
	var damaged CorruptRecords
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var res PurgeResult
		var next []byte
		var bad CorruptRecords
		err := guard(b.path, func() error {
			return b.db.Update(func(tx *bolt.Tx) error {
				var err error
				res, next, err = b.purgeRange(tx, from, p, time.Now(), &bad)
				if err == nil && res == (PurgeResult{}) {
					return errNoWrites // nothing to commit: skip the fsync
				}
				return err
			})
		})
		if err == nil {
			err = b.verifyCommit()
		}
		if err != nil && !errors.Is(err, errNoWrites) {
			return total, fmt.Errorf("keystore: purge %s: %w", b.path, err)
		}
		total.Deleted += res.Deleted
		total.Tombstoned += res.Tombstoned
		damaged.Merge(bad)
		if next == nil {
			return total, damaged.Err()
		}
		from = next
	}
}

// purgeRange purges records from key from onward until it has changed
// purgeBatch or looked at purgeScan records. It returns what it did and
// the key to resume at (nil at the end); the damaged records it passed
// over go to damaged.
func (b *Bolt) purgeRange(tx *bolt.Tx, from []byte, p PurgeRequest, now time.Time, damaged *CorruptRecords) (PurgeResult, []byte, error) {
	*damaged = CorruptRecords{} // a transaction run again starts over
	var res PurgeResult
	records, names := tx.Bucket(bucketRecords), tx.Bucket(bucketNames)
	type victim struct {
		key, name []byte
		tombstone []byte // nil: delete
	}
	var victims []victim
	var next []byte
	c := records.Cursor()
	k, v := c.First()
	if from != nil {
		k, v = c.Seek(from)
	}
	for scanned := 0; k != nil; k, v = c.Next() {
		if len(victims) == b.purgeBatch || scanned == b.purgeScan {
			next = append([]byte(nil), k...)
			break
		}
		scanned++
		sum, err := decodeSummary(string(k), v)
		if err != nil {
			damaged.Add(string(k), err)
			continue
		}
		// Keys are copied: writing invalidates the cursor's memory.
		vic := victim{key: append([]byte(nil), k...), name: []byte(sum.Name)}
		action := p.action(sum.State, sum.Name != "", sum.CreatedAt, sum.UpdatedAt, sum.Purged)
		if action != PurgeKeep && sum.State == Failed && !p.IncludeUnknown {
			// Only the whole record tells whether its operation was gone.
			rec, err := decodeRecord(string(k), v)
			if err != nil {
				damaged.Add(string(k), err)
				continue
			}
			if rec.OperationGone() {
				action = PurgeKeep
			}
		}
		switch action {
		case PurgeKeep:
			continue
		case PurgeTombstone:
			rec, err := decodeRecord(string(k), v)
			if err != nil {
				damaged.Add(string(k), err)
				continue
			}
			if vic.tombstone, err = encodeRecord(rec.Tombstone(now)); err != nil {
				return res, nil, err
			}
		}
		victims = append(victims, vic)
	}
	for _, vic := range victims {
		if vic.tombstone != nil {
			if err := records.Put(vic.key, vic.tombstone); err != nil {
				return res, nil, err
			}
			res.Tombstoned++
			continue
		}
		if err := records.Delete(vic.key); err != nil {
			return res, nil, err
		}
		if len(vic.name) > 0 && string(names.Get(vic.name)) == string(vic.key) {
			if err := names.Delete(vic.name); err != nil {
				return res, nil, err
			}
		}
		res.Deleted++
	}
	return res, next, nil
}

// goneRewrite reports whether the stored record data (in state from),
// which mayRewrite refuses to turn into to, is a Failed one whose
// operation was gone, which may become Succeeded (Record.OperationGone).
func goneRewrite(k string, data []byte, from, to State) bool {
	if !mayRewriteGone(from, to) {
		return false
	}
	r, err := decodeRecord(k, data)
	return err == nil && r.OperationGone()
}
