package keystore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// keystoreWith creates a keystore at a new path holding n records, closed.
func keystoreWith(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	for i := range n {
		_, _, err := s.Create(context.Background(), pendingRecord(fmt.Sprintf("k%d", i), fmt.Sprintf("order-%d", i)))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	// A past time, so that any write shows in the modification time.
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(path, past, past))
	return path
}

// A version 1 file (written by an earlier build) is migrated by a
// read-write open; read-only, it is read as it is and left alone.
func TestBoltReadOnlyNeverWritesTheFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := keystoreWith(t, 3)
	rawBolt(t, path, func(tx *bolt.Tx) error { // back to format 1: no log
		if err := tx.DeleteBucket([]byte("log")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{1})
	})
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(path, past, past))
	before := testenv.StateOf(t, path)

	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{ReadOnly: true})
	require.NoError(t, err)
	recs, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, 3)
	_, err = s.GetByName(ctx, "order-1")
	require.NoError(t, err)

	_, _, err = s.Create(ctx, pendingRecord("k9", "order-9"))
	assert.ErrorIs(t, err, keystore.ErrReadOnly)
	r := recs[0].Clone()
	r.State = keystore.Succeeded
	assert.ErrorIs(t, s.Update(ctx, r), keystore.ErrReadOnly)
	assert.ErrorIs(t, s.UpdateDeferred(ctx, r), keystore.ErrReadOnly)
	_, err = s.Purge(ctx, keystore.PurgeRequest{OlderThan: time.Now()})
	assert.ErrorIs(t, err, keystore.ErrReadOnly)
	require.NoError(t, s.Close())
	assert.Equal(t, before, testenv.StateOf(t, path), "a read-only open changed the file")
}

// Two read-only opens share the file; a writer waits for them (ErrLocked).
func TestBoltReadOnlySharesTheLock(t *testing.T) {
	t.Parallel()
	path := keystoreWith(t, 1)
	ro := &keystore.BoltOptions{ReadOnly: true, Timeout: 100 * time.Millisecond}
	a, err := keystore.OpenBolt(path, ro)
	require.NoError(t, err)
	defer a.Close()
	b, err := keystore.OpenBolt(path, ro)
	require.NoError(t, err)
	defer b.Close()
	_, err = keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond})
	assert.ErrorIs(t, err, keystore.ErrLocked)
}

func TestBoltNoCreateAndReadOnlyNeverCreateAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, opts := range []*keystore.BoltOptions{{NoCreate: true}, {ReadOnly: true}} {
		path := filepath.Join(dir, "missing.db")
		_, err := keystore.OpenBolt(path, opts)
		require.ErrorIs(t, err, fs.ErrNotExist)
		assert.ErrorContains(t, err, path)
		assert.NoFileExists(t, path)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing created, not even a temporary file")
}

// The fault as seen: a keystore file deleted while open took 2,118 more
// intents, acknowledged, into an unlinked file; after a restart none was
// there. A write that starts after the file is gone now fails.
func TestBoltDeletedWhileOpenFailsEveryLaterWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := keystoreWith(t, 0)
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)

	var removed atomic.Bool
	var ackedAfter, refused atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 8 { // group commits, as under load
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				after := removed.Load()
				_, _, err := s.Create(ctx, pendingRecord(fmt.Sprintf("w%d-%d", w, i), fmt.Sprintf("order-w%d-%d", w, i)))
				switch {
				case err == nil && after:
					ackedAfter.Add(1)
				case errors.Is(err, keystore.ErrFileReplaced):
					refused.Add(1)
				case err != nil:
					t.Errorf("create: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the writers commit a while
	require.NoError(t, os.Remove(path))
	removed.Store(true)
	for refused.Load() < 100 && ackedAfter.Load() < 100 { // bounded by writes, either way
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	assert.Zero(t, ackedAfter.Load(), "writes begun after the file was deleted were acknowledged")

	_, _, err = s.Create(ctx, pendingRecord("late", "order-late"))
	require.ErrorIs(t, err, keystore.ErrFileReplaced)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "deleted")
	assert.ErrorIs(t, s.Close(), keystore.ErrFileReplaced, "Close reports the loss too")

	_, err = keystore.OpenBolt(path, &keystore.BoltOptions{NoCreate: true})
	assert.ErrorIs(t, err, fs.ErrNotExist, "a program that ran before does not start over on an empty file")
}

// A file renamed over the open one (a restore, a deploy) is not the
// store's file: writes fail, and the new file is left as it was.
func TestBoltReplacedWhileOpenFailsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := keystoreWith(t, 1)
	other := keystoreWith(t, 2)
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	_, _, err = s.Create(ctx, pendingRecord("before", "order-before"))
	require.NoError(t, err)

	require.NoError(t, os.Rename(other, path))
	replaced := testenv.StateOf(t, path)
	_, _, err = s.Create(ctx, pendingRecord("after", "order-after"))
	require.ErrorIs(t, err, keystore.ErrFileReplaced)
	assert.ErrorContains(t, err, "replaced")
	r, err := s.Get(ctx, "k0")
	require.NoError(t, err)
	r.State = keystore.Succeeded
	assert.ErrorIs(t, s.Update(ctx, r), keystore.ErrFileReplaced)
	assert.ErrorIs(t, s.UpdateDeferred(ctx, r), keystore.ErrFileReplaced)
	assert.Error(t, s.Close())
	assert.Equal(t, replaced, testenv.StateOf(t, path))
}

// newestMetaPage returns the offset of the meta page of the latest
// transaction of the file at path, and that transaction's id.
func newestMetaPage(t *testing.T, path string) (off int64, txid uint64) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	ps := int64(binary.NativeEndian.Uint32(data[16+8:]))
	tx0 := binary.NativeEndian.Uint64(data[16+48:])
	tx1 := binary.NativeEndian.Uint64(data[ps+16+48:])
	if tx1 > tx0 {
		return ps, tx1
	}
	return 0, tx0
}

// The fault as seen: zeroing the newest meta page made bbolt open the file
// as of the commit before, silently, losing the intent of the last one.
func TestBoltDamagedNewestMetaIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := keystoreWith(t, 2)
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	_, _, err = s.Create(ctx, pendingRecord("last", "order-last"))
	require.NoError(t, err)
	// The file as a crash would leave it: the last commit, a Create.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	path = filepath.Join(t.TempDir(), "crashed.db")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	off, _ := newestMetaPage(t, path)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 4096), off)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	before := testenv.StateOf(t, path)

	for _, ro := range []bool{false, true} {
		_, err = keystore.OpenBolt(path, &keystore.BoltOptions{ReadOnly: ro})
		require.ErrorIs(t, err, keystore.ErrMetaDamaged, "read-only %t", ro)
		assert.ErrorIs(t, err, keystore.ErrCorrupt)
		assert.ErrorContains(t, err, path)
		assert.ErrorContains(t, err, "AcceptOlderMeta")
	}
	assert.Equal(t, before, testenv.StateOf(t, path))

	// Asked for, the older state opens, read-only, to be looked at.
	s, err = keystore.OpenBolt(path, &keystore.BoltOptions{ReadOnly: true, AcceptOlderMeta: true})
	require.NoError(t, err)
	recs, err := s.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, 2, "the older state: the last commit is the one lost")
	require.NoError(t, s.Close())
	assert.Equal(t, before, testenv.StateOf(t, path))
}

// A mutant the page check refuses is refused before bbolt reads it, so
// no bbolt panic is needed to see it: here a leaf turned into a branch.
func TestBoltPageTypeDamageIsCorrupt(t *testing.T) {
	t.Parallel()
	path := keystoreWith(t, 3)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	ps := int(binary.NativeEndian.Uint32(data[16+8:]))
	hits := 0
	for p := 2; (p+1)*ps <= len(data); p++ {
		if data[p*ps+8] != 0x02 { // not a leaf
			continue
		}
		hits++
		mutated := append([]byte(nil), data...)
		mutated[p*ps+8] = 0x01
		mp := filepath.Join(t.TempDir(), "mutant.db")
		require.NoError(t, os.WriteFile(mp, mutated, 0o600))
		s, err := keystore.OpenBolt(mp, &keystore.BoltOptions{ReadOnly: true})
		if err == nil { // a leaf no longer in use: still readable
			_, err = s.List(context.Background(), keystore.Filter{})
			require.NoError(t, s.Close())
		}
		if err != nil {
			require.ErrorIs(t, err, keystore.ErrCorrupt, "page %d", p)
		}
	}
	require.Positive(t, hits)
}
