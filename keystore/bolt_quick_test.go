package keystore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quickRecord is a pending record under key, and its settled form.
func quickRecord(key string) (pending, settledRec *Record) {
	pending = testRecord(key, "")
	return pending, settledCopy(pending)
}

// The quick form is taken for a record this process created by adoption,
// and declined, with nothing done, for one only the file holds.
func TestBoltTryUpdateDeferredOnlyWithoutIO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openDeferBolt(t, filepath.Join(t.TempDir(), "keys.db"), time.Hour)

	adopted, settledAdopted := quickRecord("k-adopted")
	_, _, err := b.AdoptCreate(ctx, adopted)
	require.NoError(t, err)
	done, err := b.TryUpdateDeferred(ctx, settledAdopted)
	require.NoError(t, err)
	require.True(t, done)
	got, err := b.Get(ctx, adopted.Key)
	require.NoError(t, err)
	assert.Equal(t, Succeeded, got.State, "reads back settled at once")
	assert.Equal(t, Pending, onDisk(t, b, adopted.Key), "not committed yet")

	again := settledAdopted.Clone()
	again.State = Pending
	done, err = b.TryUpdateDeferred(ctx, again)
	assert.True(t, done, "checked against the deferred write, in memory")
	require.ErrorIs(t, err, ErrSettled)

	copied, settledCopied := quickRecord("k-copied")
	_, _, err = b.Create(ctx, copied)
	require.NoError(t, err)
	done, err = b.TryUpdateDeferred(ctx, settledCopied)
	require.NoError(t, err)
	assert.False(t, done, "only the file knows this record: declined")
	got, err = b.Get(ctx, copied.Key)
	require.NoError(t, err)
	assert.Equal(t, Pending, got.State, "nothing done")
	require.NoError(t, b.UpdateDeferred(ctx, settledCopied))
}

// A lock that a call doing I/O may hold is never waited for.
func TestBoltTryUpdateDeferredNeverWaitsForALock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := openDeferBolt(t, filepath.Join(t.TempDir(), "keys.db"), time.Hour)
	rec, settledRec := quickRecord("k-locked")
	_, _, err := b.AdoptCreate(ctx, rec)
	require.NoError(t, err)

	b.closeMu.Lock() // as Close holds it while it commits
	done, err := b.TryUpdateDeferred(ctx, settledRec)
	b.closeMu.Unlock()
	require.NoError(t, err)
	assert.False(t, done)

	b.deferred.mu.Lock() // as a deferred write reading the file holds it
	done, err = b.TryUpdateDeferred(ctx, settledRec)
	b.deferred.mu.Unlock()
	require.NoError(t, err)
	assert.False(t, done)

	done, err = b.TryUpdateDeferred(ctx, settledRec)
	require.NoError(t, err)
	assert.True(t, done)
	require.NoError(t, b.Close())
	done, err = b.TryUpdateDeferred(ctx, settledRec)
	assert.True(t, done)
	require.ErrorIs(t, err, ErrClosed)
}
