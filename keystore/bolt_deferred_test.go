package keystore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// openDeferBolt opens a keystore whose deferred writes wait delay for a
// commit to join.
func openDeferBolt(t *testing.T, path string, delay time.Duration) *Bolt {
	t.Helper()
	b, err := OpenBolt(path, &BoltOptions{Timeout: 200 * time.Millisecond, DeferDelay: delay})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// onDisk reads the state committed to the file under key, past the
// deferred writes.
func onDisk(t *testing.T, b *Bolt, key string) State {
	t.Helper()
	var rec *Record
	require.NoError(t, b.db.View(func(tx *bolt.Tx) error {
		var err error
		rec, err = getRecord(tx, key, b.log.committed(key))
		return err
	}))
	return rec.State
}

// settledCopy is r made Succeeded with an answer.
func settledCopy(r *Record) *Record {
	s := r.Clone()
	s.State = Succeeded
	s.Response = &Response{Status: 201, Body: []byte(`{"id":"pay_1"}`)}
	s.UpdatedAt = s.UpdatedAt.Add(time.Second)
	return s
}

func TestBoltDeferredReadsBackAtOnceAndCloseFlushes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := OpenBolt(path, &BoltOptions{DeferDelay: time.Hour}) // only Close commits it
	require.NoError(t, err)
	rec := testRecord("k1", "order-1")
	_, _, err = b.Create(ctx, rec)
	require.NoError(t, err)
	commits := b.writes.commits.Load()

	require.NoError(t, b.UpdateDeferred(ctx, settledCopy(rec)))
	assert.Equal(t, Pending, onDisk(t, b, "k1"), "not committed yet")
	assert.Equal(t, commits, b.writes.commits.Load())

	got, err := b.Get(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, Succeeded, got.State)
	assert.Equal(t, 201, got.Response.Status)
	got, err = b.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assert.Equal(t, Succeeded, got.State)
	existing, created, err := b.Create(ctx, testRecord("k2", "order-1"))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, Succeeded, existing.State)
	list, err := b.List(ctx, Filter{States: []State{Pending}})
	require.NoError(t, err)
	assert.Empty(t, list, "a deferred settle is no longer pending")
	list, err = b.List(ctx, Filter{States: []State{Succeeded}})
	require.NoError(t, err)
	require.Len(t, list, 1)

	require.NoError(t, b.Close())
	b = openDeferBolt(t, path, time.Hour)
	got, err = b.Get(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, Succeeded, got.State, "Close committed the deferred write")
}

func TestBoltDeferredJoinsNextCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openDeferBolt(t, filepath.Join(t.TempDir(), "keys.db"), time.Hour)
	rec := testRecord("k1", "")
	_, _, err := b.Create(ctx, rec)
	require.NoError(t, err)
	require.NoError(t, b.UpdateDeferred(ctx, settledCopy(rec)))
	commits := b.writes.commits.Load()

	_, _, err = b.Create(ctx, testRecord("k2", ""))
	require.NoError(t, err)
	assert.Equal(t, commits+1, b.writes.commits.Load(), "one commit for the Create and the deferred settle")
	assert.Equal(t, Succeeded, onDisk(t, b, "k1"), "the settle rode along with the Create")
	b.deferred.mu.Lock()
	assert.Empty(t, b.deferred.data, "committed writes leave the set")
	b.deferred.mu.Unlock()
}

func TestBoltDeferredCommitsAloneAfterDelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openDeferBolt(t, filepath.Join(t.TempDir(), "keys.db"), 5*time.Millisecond)
	rec := testRecord("k1", "")
	_, _, err := b.Create(ctx, rec)
	require.NoError(t, err)
	require.NoError(t, b.UpdateDeferred(ctx, settledCopy(rec)))
	assert.Eventually(t, func() bool { return onDisk(t, b, "k1") == Succeeded },
		2*time.Second, time.Millisecond, "an idle store commits the deferred write on its own")
}

func TestBoltDeferredChecksLikeUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openDeferBolt(t, filepath.Join(t.TempDir(), "keys.db"), time.Hour)
	assert.ErrorIs(t, b.UpdateDeferred(ctx, settledCopy(testRecord("absent", ""))), ErrNotFound)

	rec := testRecord("k1", "order-1")
	_, _, err := b.Create(ctx, rec)
	require.NoError(t, err)
	renamed := settledCopy(rec)
	renamed.Name = "order-2"
	assert.Error(t, b.UpdateDeferred(ctx, renamed), "a name belongs to its intent")

	require.NoError(t, b.UpdateDeferred(ctx, settledCopy(rec)))
	failed := settledCopy(rec)
	failed.State = Failed
	assert.ErrorIs(t, b.UpdateDeferred(ctx, failed), ErrSettled, "checked against the deferred write")
	back := rec.Clone()
	assert.ErrorIs(t, b.Update(ctx, back), ErrSettled, "Update sees the queued settle in its commit")

	// A later Update in the same state supersedes the deferred write.
	again := settledCopy(rec)
	again.LastError = "audited"
	require.NoError(t, b.Update(ctx, again))
	got, err := b.Get(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, "audited", got.LastError)
	assert.Equal(t, Succeeded, onDisk(t, b, "k1"))
	require.NoError(t, b.Close(), "no deferred write was lost")
}
