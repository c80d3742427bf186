package keystore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

func TestMemoryRunKeeper(t *testing.T) {
	t.Parallel()
	m := keystore.NewMemory()
	require.NoError(t, m.PutRun(context.Background(), &keystore.Run{ID: "r1", Version: 1}))
	require.NoError(t, m.Close())
	_, err := m.GetRun(context.Background(), "r1")
	require.ErrorIs(t, err, keystore.ErrClosed)
}

func TestBoltRunKeeperSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, b.PutRun(ctx, &keystore.Run{ID: "r1", Version: 1, State: "running"}))
	require.NoError(t, b.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2, State: "completed"}))
	require.NoError(t, b.Close())

	b = openBolt(t, path)
	got, err := b.GetRun(context.Background(), "r1")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), got.Version, "durable across a reopen")
	require.ErrorIs(t, b.PutRun(context.Background(), &keystore.Run{ID: "r1", Version: 2}), keystore.ErrRunVersion)
}

// A run whose bytes changed on disk is ErrCorrupt, named by ListRuns
// beside the sound ones, never read as another decision.
func TestBoltRunDamageIsCorrupt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, b.PutRun(ctx, &keystore.Run{ID: "good", Version: 1, State: "running"}))
	require.NoError(t, b.PutRun(ctx, &keystore.Run{ID: "bad", Version: 1, State: "running"}))
	require.NoError(t, b.Close())

	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		runs := tx.Bucket([]byte("runs"))
		v := append([]byte(nil), runs.Get([]byte("bad"))...)
		v[len(v)-3] ^= 0x01 // one bit of the JSON flips
		return runs.Put([]byte("bad"), v)
	}))
	require.NoError(t, db.Close())

	b = openBolt(t, path)
	_, err = b.GetRun(ctx, "bad")
	require.ErrorIs(t, err, keystore.ErrCorrupt)
	runs, err := b.ListRuns(ctx)
	require.ErrorIs(t, err, keystore.ErrCorrupt)
	require.Len(t, runs, 1)
	assert.Equal(t, "good", runs[0].ID)
	require.ErrorIs(t, b.PutRun(ctx, &keystore.Run{ID: "bad", Version: 2}), keystore.ErrCorrupt, "no write over a run that cannot be read")
}

func TestBoltReadOnlyRefusesRuns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	ro, err := keystore.OpenBolt(path, &keystore.BoltOptions{ReadOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ro.Close() })
	_, err = ro.GetRun(context.Background(), "none")
	require.ErrorIs(t, err, keystore.ErrNotFound, "a file without runs has none")
	require.ErrorIs(t, ro.PutRun(context.Background(), &keystore.Run{ID: "x", Version: 1}), keystore.ErrReadOnly)
}
