package keystore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// createKeys creates records key-0 … key-(n-1), named name-0 … in b.
func createKeys(t *testing.T, b *Bolt, n int) {
	t.Helper()
	for i := range n {
		_, _, err := b.Create(context.Background(), testRecord(fmt.Sprintf("key-%d", i), fmt.Sprintf("name-%d", i)))
		require.NoError(t, err)
	}
}

// requireAllReadable checks that b holds key-0 … key-(n-1), each once,
// by key, by name and in List.
func requireAllReadable(t *testing.T, b *Bolt, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		got, err := b.Get(ctx, fmt.Sprintf("key-%d", i))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("name-%d", i), got.Name)
		got, err = b.GetByName(ctx, fmt.Sprintf("name-%d", i))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("key-%d", i), got.Key)
	}
	list, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, list, n, "every record once, in one bucket or the other")
}

func TestBoltFoldMovesTheLogInBatches(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	b.foldBatch = 8
	createKeys(t, b, 30)
	before := b.writes.commits.Load()
	require.NoError(t, b.fold())
	assert.Equal(t, int64(4), b.writes.commits.Load()-before, "30 records, 8 a transaction")
	assert.Equal(t, 0, bucketLen(t, b, bucketLog))
	assert.Equal(t, 30, bucketLen(t, b, bucketRecords))
	assert.Zero(t, b.log.size(), "the index holds no moved record")
	requireAllReadable(t, b, 30)
	require.NoError(t, b.fold(), "an empty log folds to nothing")
	assert.Equal(t, int64(4), b.writes.commits.Load()-before, "and commits nothing")
}

func TestBoltFoldLeavesRecordsWrittenDuringIt(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	b.foldBatch, b.foldAt = 4, 1<<20
	createKeys(t, b, 10)
	// A fold ends at the last record the log held when it began.
	var last []byte
	done, _, err := b.foldBatchOf(&last)
	require.NoError(t, err)
	require.False(t, done)
	_, _, err = b.Create(context.Background(), testRecord("key-10", "name-10"))
	require.NoError(t, err)
	for !done {
		done, _, err = b.foldBatchOf(&last)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, bucketLen(t, b, bucketLog), "the record written during the fold waits for the next")
	assert.Equal(t, 10, bucketLen(t, b, bucketRecords))
	requireAllReadable(t, b, 11)
}

// TestBoltWritesCommitBetweenFoldTransactions holds a background fold at
// its first rest and writes then: the write commits while the fold is
// still under way, which it could not if the fold held the store's
// writes for its whole length.
func TestBoltWritesCommitBetweenFoldTransactions(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	b.foldBatch = 4
	paused := make(chan struct{})
	resume := make(chan struct{})
	first := true
	b.foldPaused = func() {
		if first {
			first = false
			close(paused)
			<-resume
		}
	}
	b.foldAt = 16
	createKeys(t, b, 16) // the 16th commit starts the fold
	select {
	case <-paused:
	case <-time.After(10 * time.Second):
		t.Fatal("the background fold never rested")
	}
	wrote := make(chan error, 1)
	go func() {
		_, _, err := b.Create(context.Background(), testRecord("key-16", "name-16"))
		wrote <- err
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited for the whole fold")
	}
	assert.Greater(t, bucketLen(t, b, bucketLog), 4, "the fold was still under way")
	close(resume)
	assert.Eventually(t, func() bool { return !b.log.folding.Load() }, 10*time.Second, time.Millisecond)
	requireAllReadable(t, b, 17)
}

// TestBoltCloseEndsABackgroundFold closes the store while a background
// fold rests: Close does not wait for the rest of it, and folds what is
// left itself.
func TestBoltCloseEndsABackgroundFold(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := OpenBolt(path, &BoltOptions{Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	b.foldBatch, b.foldAt = 4, 16
	paused := make(chan struct{}, 1)
	b.foldPaused = func() {
		select {
		case paused <- struct{}{}:
		default:
		}
	}
	createKeys(t, b, 16)
	select {
	case <-paused:
	case <-time.After(10 * time.Second):
		t.Fatal("the background fold never rested")
	}
	require.NoError(t, b.Close())
	assert.Eventually(t, func() bool { return !b.log.folding.Load() }, 10*time.Second, time.Millisecond,
		"the background fold ended with the store")

	b = openDeferBolt(t, path, time.Hour)
	assert.Equal(t, 0, bucketLen(t, b, bucketLog), "Close folded the rest")
	requireAllReadable(t, b, 16)
}
