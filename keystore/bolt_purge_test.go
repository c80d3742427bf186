package keystore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

func TestBoltPurgeWorksInBoundedTransactions(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	b.purgeBatch, b.purgeScan = 3, 5 // many transactions for a few records
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	for i := range 20 {
		r := testRecord(fmt.Sprintf("k%02d", i), fmt.Sprintf("n%02d", i))
		r.UpdatedAt = old
		if i%4 != 0 {
			r.State = Succeeded
		}
		_, _, err := b.Create(ctx, r)
		require.NoError(t, err)
	}

	res, err := b.Purge(ctx, PurgeRequest{OlderThan: time.Now(), KeepNamesAfter: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, PurgeResult{Deleted: 15}, res)
	left, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, left, 5)
	for _, r := range left {
		assert.Equal(t, Pending, r.State)
	}
	require.NoError(t, b.db.View(func(tx *bolt.Tx) error {
		assert.Equal(t, 5, tx.Bucket(bucketNames).Stats().KeyN, "purged names left the index")
		return nil
	}))
}

func TestBoltPurgeTombstonesInBoundedTransactions(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	b.purgeBatch, b.purgeScan = 3, 5
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	for i := range 20 {
		r := testRecord(fmt.Sprintf("k%02d", i), fmt.Sprintf("n%02d", i))
		r.State, r.UpdatedAt = Succeeded, old
		_, _, err := b.Create(ctx, r)
		require.NoError(t, err)
	}
	res, err := b.Purge(ctx, PurgeRequest{OlderThan: time.Now()})
	require.NoError(t, err)
	assert.Equal(t, PurgeResult{Tombstoned: 20}, res)
	for i := range 20 {
		got, err := b.GetByName(ctx, fmt.Sprintf("n%02d", i))
		require.NoError(t, err)
		assert.False(t, got.Purged.IsZero())
	}
	res, err = b.Purge(ctx, PurgeRequest{OlderThan: time.Now()})
	require.NoError(t, err)
	assert.Zero(t, res, "a tombstone is not purged again before its cutoff")
}

func TestBoltPurgeStopsWhenContextEnds(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	r := testRecord("k1", "")
	r.State, r.UpdatedAt = Failed, time.Now().Add(-time.Hour)
	_, _, err := b.Create(context.Background(), r)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := b.Purge(ctx, PurgeRequest{OlderThan: time.Now()})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, res)
	_, err = b.Get(context.Background(), "k1")
	assert.NoError(t, err)
}
