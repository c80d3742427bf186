package keystore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var _ DamageRepairer = (*Bolt)(nil)

// Damaged returns the damaged record stored under key, with the name the
// name index binds to it (see DamageRepairer).
func (b *Bolt) Damaged(ctx context.Context, key string) (*DamagedRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	if rec, err := b.deferredRecord(key); rec != nil || err != nil {
		if err != nil {
			return nil, err
		}
		return nil, notDamaged(key)
	}
	var d *DamagedRecord
	err = b.view(func(tx *bolt.Tx) error {
		d = nil
		bucket, loc := locate(tx, key, b.log.committed(key))
		data := bucket.Get(loc)
		if data == nil {
			return fmt.Errorf("%w: %s", ErrNotFound, keyRef(key))
		}
		_, why := decodeRecord(key, data)
		if why == nil {
			return notDamaged(key)
		}
		d = &DamagedRecord{Key: key, Raw: bytes.Clone(data), Why: why, Name: boundName(tx, key)}
		return nil
	})
	return d, err
}

// boundName is the name the name index binds to key, "" if none: a scan,
// since the index maps names to keys only.
func boundName(tx *bolt.Tx, key string) string {
	var name string
	_ = tx.Bucket(bucketNames).ForEach(func(k, v []byte) error {
		if string(v) == key {
			name = string(k)
			return errFound
		}
		return nil
	})
	return name
}

var errFound = errors.New("found")

// ReplaceDamaged replaces the damaged record d by r in one write
// transaction (see DamageRepairer).
func (b *Bolt) ReplaceDamaged(ctx context.Context, d *DamagedRecord, r *Record) error {
	if err := checkWrite(ctx, "replace damaged", r); err != nil {
		return err
	}
	if err := checkPlaceholder(d, r); err != nil {
		return err
	}
	release, err := b.enter()
	if err != nil {
		return err
	}
	defer release()
	if err := b.refuseWrite(); err != nil {
		return err
	}
	data, err := encodeRecord(r)
	if err != nil {
		return err
	}
	b.adopted.drop(r.Key)
	err = b.writes.submit(ctx, func(tx *bolt.Tx) (bool, error) {
		bucket, loc := locate(tx, d.Key, b.log.committed(d.Key))
		stored := bucket.Get(loc)
		switch {
		case stored == nil:
			return false, fmt.Errorf("%w: %s", ErrNotFound, keyRef(d.Key))
		case !bytes.Equal(stored, d.Raw):
			return false, fmt.Errorf("%w: %s", ErrDamageChanged, keyRef(d.Key))
		}
		if _, why := decodeRecord(d.Key, stored); why == nil {
			return false, notDamaged(d.Key)
		}
		if name := boundName(tx, d.Key); name != d.Name {
			return false, fmt.Errorf("%w: %s: the name bound to it changed", ErrDamageChanged, keyRef(d.Key))
		}
		if err := bucket.Put(loc, data); err != nil {
			return true, fmt.Errorf("keystore: replace damaged %s: %w", keyRef(d.Key), err)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	b.dropDeferred(r.Key)
	return nil
}
