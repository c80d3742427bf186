package keystore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var (
	_ NameScanner = (*Bolt)(nil)
	_ Rebinder    = (*Bolt)(nil)
)

// Namesakes implements NameScanner in one read transaction: the name
// itself, then a seek to its scoped names, which sort together in the
// name index (ScopedName appends a fixed mark and the principal).
func (b *Bolt) Namesakes(ctx context.Context, name string, limit int) ([]*Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if name == "" || limit <= 0 {
		return nil, nil
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	snap := b.deferredSnapshot() // before the read: see overlay
	prefix := []byte(name + principalNameMark)
	for {
		gen := b.log.gen.Load()
		var out []*Record
		err := b.view(func(tx *bolt.Tx) error {
			out = nil
			names := tx.Bucket(bucketNames)
			add := func(stored, key []byte) error {
				rec, err := namedRecord(tx, string(stored), string(key), b.log.committed(string(key)))
				if err != nil {
					return err
				}
				if rec, err = overlay(rec, snap); err != nil {
					return err
				}
				if IsNamesake(rec, name) {
					out = append(out, rec)
				}
				return nil
			}
			if key := names.Get([]byte(name)); key != nil {
				if err := add([]byte(name), key); err != nil {
					return err
				}
			}
			c := names.Cursor()
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Next() {
				if err := add(k, v); err != nil {
					return err
				}
			}
			return nil
		})
		if errors.Is(err, ErrCorrupt) && b.log.gen.Load() != gen {
			continue // a fold moved a record during the read
		}
		return out, err
	}
}

// Rebind implements Rebinder: the record and the name index change in one
// write transaction.
func (b *Bolt) Rebind(ctx context.Context, key, from string, to Binding) (*Record, error) {
	if err := checkRebind(ctx, key, from, to); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	b.adopted.drop(key)
	var out *Record
	err = b.writes.submit(ctx, func(tx *bolt.Tx) (bool, error) {
		out = nil
		names := tx.Bucket(bucketNames)
		if string(names.Get([]byte(from))) != key {
			return false, fmt.Errorf("rebind: %w: %s under name %q", ErrNotFound, keyRef(key), from)
		}
		if holder := names.Get([]byte(to.Name)); holder != nil && string(holder) != key {
			return false, fmt.Errorf("rebind %s: %w: %q", keyRef(key), ErrNameTaken, to.Name)
		}
		records, loc := locate(tx, key, b.log.committed(key))
		data := records.Get(loc)
		if data == nil {
			return false, fmt.Errorf("%w: name %q maps to missing record %s", ErrCorrupt, from, keyRef(key))
		}
		old, err := decodeRecord(key, data)
		if err != nil {
			return false, err
		}
		rec := rebound(old, to)
		enc, err := encodeRecord(rec)
		if err != nil {
			return false, err
		}
		if err := records.Put(loc, enc); err != nil {
			return true, fmt.Errorf("keystore: rebind %s: %w", keyRef(key), err)
		}
		if err := names.Delete([]byte(from)); err != nil {
			return true, fmt.Errorf("keystore: rebind %s: %w", keyRef(key), err)
		}
		if err := names.Put([]byte(to.Name), []byte(key)); err != nil {
			return true, fmt.Errorf("keystore: rebind %s: %w", keyRef(key), err)
		}
		out = rec
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	b.dropDeferred(key) // the rebind read what was deferred before it
	return out, nil
}
