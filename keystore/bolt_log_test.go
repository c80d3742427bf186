package keystore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// bucketLen counts the entries of bucket name in the open b.
func bucketLen(t *testing.T, b *Bolt, name []byte) int {
	t.Helper()
	n := 0
	require.NoError(t, b.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(name).Stats().KeyN
		return nil
	}))
	return n
}

func TestBoltCreatesGoToTheLogAndCloseFoldsThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := OpenBolt(path, nil)
	require.NoError(t, err)
	for i := range 20 {
		_, _, err := b.Create(ctx, testRecord(fmt.Sprintf("key-%02d", 19-i), fmt.Sprintf("name-%d", i)))
		require.NoError(t, err)
	}
	assert.Equal(t, 20, bucketLen(t, b, bucketLog), "new records are appended to the log")
	assert.Equal(t, 0, bucketLen(t, b, bucketRecords))
	got, err := b.GetByName(ctx, "name-3")
	require.NoError(t, err)
	assert.Equal(t, "key-16", got.Key)
	settled := got.Clone()
	settled.State = Failed
	require.NoError(t, b.Update(ctx, settled), "updated in place, in the log")
	_, _, err = b.Create(ctx, testRecord("key-16", ""))
	assert.ErrorIs(t, err, ErrDuplicateKey, "a key in the log is taken")
	require.NoError(t, b.Close())

	b = openDeferBolt(t, path, time.Hour)
	assert.Equal(t, 0, bucketLen(t, b, bucketLog), "Close folded the log")
	assert.Equal(t, 20, bucketLen(t, b, bucketRecords))
	got, err = b.Get(ctx, "key-16")
	require.NoError(t, err)
	assert.Equal(t, Failed, got.State)
	list, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 20)
}

func TestBoltFoldsTheLogWhenItGrows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openTestBolt(t)
	b.foldAt = 8
	for i := range 30 {
		_, _, err := b.Create(ctx, testRecord(fmt.Sprintf("key-%d", i), ""))
		require.NoError(t, err)
		got, err := b.Get(ctx, fmt.Sprintf("key-%d", i/2))
		require.NoError(t, err, "readable while folds run")
		assert.Equal(t, fmt.Sprintf("key-%d", i/2), got.Key)
	}
	// Folds run in the background, each moving the whole log; writes
	// made during one start none, so the one that ends looks again. The
	// log ends below foldAt, however the folds fell.
	assert.Eventually(t, func() bool { return bucketLen(t, b, bucketLog) < b.foldAt && !b.log.folding.Load() },
		10*time.Second, time.Millisecond, "background folds moved the log")
	assert.Equal(t, 30, bucketLen(t, b, bucketLog)+bucketLen(t, b, bucketRecords))
	list, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 30)
}

// TestBoltOpensVersion1File builds a file with the version 1 layout (no
// log, records under their keys) through bbolt itself, and opens it.
func TestBoltOpensVersion1File(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	old := testRecord("old-key", "old-name")
	data, err := encodeRecord(old)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket(bucketMeta)
		_ = meta.Put(metaFormatKey, formatMarker)
		_ = meta.Put(metaVersionKey, []byte{1})
		records, _ := tx.CreateBucket(bucketRecords)
		names, _ := tx.CreateBucket(bucketNames)
		_ = names.Put([]byte("old-name"), []byte("old-key"))
		return records.Put([]byte("old-key"), data)
	}))
	require.NoError(t, db.Close())

	b := openDeferBolt(t, path, time.Hour)
	got, err := b.GetByName(ctx, "old-name")
	require.NoError(t, err)
	assert.Equal(t, "old-key", got.Key)
	require.NoError(t, b.db.View(func(tx *bolt.Tx) error {
		assert.Equal(t, []byte{formatVersion}, tx.Bucket(bucketMeta).Get(metaVersionKey), "migrated")
		assert.NotNil(t, tx.Bucket(bucketLog))
		return nil
	}))
	settled := got.Clone()
	settled.State = Succeeded
	require.NoError(t, b.Update(ctx, settled), "a version 1 record is updated where it is")
	_, _, err = b.Create(ctx, testRecord("new-key", ""))
	require.NoError(t, err)
	list, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, list, 2)
	assert.Equal(t, 1, bucketLen(t, b, bucketRecords))
}
