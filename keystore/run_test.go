package keystore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

// runKeeperContract holds a RunKeeper to its contract: versions are a
// compare-and-set, reads are copies, a listing is oldest first.
func runKeeperContract(t *testing.T, rk keystore.RunKeeper) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, err := rk.GetRun(ctx, "r1")
	require.ErrorIs(t, err, keystore.ErrNotFound)

	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2}), keystore.ErrRunVersion, "a first write is version 1")
	require.NoError(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 1, State: "running", Data: []byte(`{"a":1}`), CreatedAt: t0, UpdatedAt: t0}))
	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 1, State: "running"}), keystore.ErrRunVersion, "version 1 of a run that exists")
	require.NoError(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2, State: "completed", Data: []byte(`{"a":2}`), CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}))
	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2, State: "compensating"}), keystore.ErrRunVersion, "a writer that read version 1 loses")
	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 4}), keystore.ErrRunVersion, "no version is skipped")
	require.Error(t, rk.PutRun(ctx, &keystore.Run{Version: 1}), "an empty id")
	require.Error(t, rk.PutRun(ctx, nil))

	got, err := rk.GetRun(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), got.Version)
	assert.Equal(t, "completed", got.State)
	assert.JSONEq(t, `{"a":2}`, string(got.Data))
	got.Data[0] = 'X' // a copy: the store keeps its own
	again, err := rk.GetRun(ctx, "r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":2}`, string(again.Data))

	require.NoError(t, rk.PutRun(ctx, &keystore.Run{ID: "r0", Version: 1, State: "running", CreatedAt: t0.Add(-time.Minute)}))
	runs, err := rk.ListRuns(ctx)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, "r0", runs[0].ID, "oldest first")
	assert.Equal(t, "r1", runs[1].ID)
}

func TestMemoryRunKeeper(t *testing.T) {
	t.Parallel()
	m := keystore.NewMemory()
	runKeeperContract(t, m)
	require.NoError(t, m.Close())
	_, err := m.GetRun(context.Background(), "r1")
	require.ErrorIs(t, err, keystore.ErrClosed)
}

func TestBoltRunKeeperSurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	b, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	runKeeperContract(t, b)
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
