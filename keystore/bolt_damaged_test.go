package keystore_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

// A damaged record is read as stored, named by the name bound to it, and
// replaced by a placeholder that keeps its key bound to that name.
func TestBoltRepairsADamagedRecordKeepingItsName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	scoped := keystore.ScopedName("order-2", "4acf5e84")
	for _, r := range []*keystore.Record{pendingRecord("k1", "order-1"), pendingRecord("k2", scoped)} {
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	flipBytes(t, path, "k2", 2, rand.New(rand.NewPCG(7, 7)))

	s = openBolt(t, path)
	_, err = s.Damaged(ctx, "k1")
	assert.ErrorIs(t, err, keystore.ErrNotDamaged, "a sound record is not repaired")
	_, err = s.Damaged(ctx, "nope")
	assert.ErrorIs(t, err, keystore.ErrNotFound)

	d, err := s.Damaged(ctx, "k2")
	require.NoError(t, err)
	assert.Equal(t, scoped, d.Name)
	assert.Equal(t, "order-2", d.BusinessName())
	assert.ErrorIs(t, d.Why, keystore.ErrCorrupt)
	require.NotEmpty(t, d.Raw)

	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	ph := keystore.Placeholder(d, "alice", "bytes in k2.json", at)
	stale := *d
	stale.Raw = append([]byte("x"), d.Raw...)
	assert.ErrorIs(t, s.ReplaceDamaged(ctx, &stale, ph), keystore.ErrDamageChanged, "only what was read is replaced")
	other := *ph
	other.Name = ""
	assert.Error(t, s.ReplaceDamaged(ctx, d, &other), "the name stays bound")

	require.NoError(t, s.ReplaceDamaged(ctx, d, ph))
	got, err := s.Get(ctx, "k2")
	require.NoError(t, err)
	assert.Equal(t, keystore.Expired, got.State)
	assert.Equal(t, "4acf5e84", got.Principal)
	assert.True(t, got.MayHaveExecuted)
	require.Len(t, got.Reconciliations, 1)
	assert.Equal(t, keystore.ReconciledUnknown, got.Reconciliations[0].Outcome)
	byName, err := s.GetByName(ctx, scoped)
	require.NoError(t, err)
	assert.Equal(t, "k2", byName.Key, "a re-run of the name finds the same key")
	_, err = s.List(ctx, keystore.Filter{})
	assert.NoError(t, err, "nothing damaged is left")
	assert.ErrorIs(t, s.ReplaceDamaged(ctx, d, ph), keystore.ErrDamageChanged)
}

// An unnamed damaged record is repaired under its key alone.
func TestBoltRepairsAnUnnamedDamagedRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	s := openBolt(t, path)
	_, _, err := s.Create(ctx, pendingRecord("k1", ""))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	rawBolt(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("records"))
		v := append([]byte(nil), b.Get([]byte("k1"))...)
		v[len(v)-3] ^= 0x10
		return b.Put([]byte("k1"), v)
	})
	s = openBolt(t, path)
	d, err := s.Damaged(ctx, "k1")
	require.NoError(t, err)
	assert.Empty(t, d.Name)
	require.NoError(t, s.ReplaceDamaged(ctx, d, keystore.Placeholder(d, "bob", "exported", time.Now())))
	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, keystore.Expired, got.State)
}
