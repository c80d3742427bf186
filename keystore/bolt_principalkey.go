package keystore

import (
	"context"

	bolt "go.etcd.io/bbolt"
)

// metaPrincipalKey holds the key of the principal fingerprint in the meta
// bucket; absent in files of earlier builds until a client opens them.
var metaPrincipalKey = []byte("principal-key")

// PrincipalKey implements PrincipalKeyKeeper: the key is in the meta
// bucket, written by the first client that opens the file. A file that
// holds records without one was written by a build that fingerprinted
// principals under legacy, and keeps it.
func (b *Bolt) PrincipalKey(ctx context.Context, fresh, legacy []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(fresh) < MinPrincipalKeyLen || len(legacy) < MinPrincipalKeyLen {
		return nil, errShortPrincipalKey
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	var key []byte
	err = b.view(func(tx *bolt.Tx) error {
		key = append([]byte(nil), tx.Bucket(bucketMeta).Get(metaPrincipalKey)...)
		return nil
	})
	if err != nil || len(key) > 0 {
		return key, err
	}
	err = b.writes.submit(ctx, func(tx *bolt.Tx) (bool, error) {
		meta := tx.Bucket(bucketMeta)
		if stored := meta.Get(metaPrincipalKey); len(stored) > 0 {
			key = append([]byte(nil), stored...)
			return false, nil
		}
		key = fresh
		if k, _ := tx.Bucket(bucketRecords).Cursor().First(); k != nil {
			key = legacy
		} else if lb := logBucket(tx); lb != nil {
			if k, _ := lb.Cursor().First(); k != nil {
				key = legacy
			}
		}
		key = append([]byte(nil), key...)
		return true, meta.Put(metaPrincipalKey, key)
	})
	if err != nil {
		return nil, err
	}
	return key, nil
}
