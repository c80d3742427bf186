package keystore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

// flipBytes flips n random bits, each in a random byte, of the stored
// value of key, through bbolt's own API, as damage on disk would.
func flipBytes(t *testing.T, path, key string, n int, rng *rand.Rand) {
	t.Helper()
	rawBolt(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("records"))
		v := append([]byte(nil), b.Get([]byte(key))...)
		require.NotEmpty(t, v, key)
		for range n {
			v[rng.IntN(len(v))] ^= 1 << rng.IntN(8)
		}
		return b.Put([]byte(key), v)
	})
}

// The faults as seen: two flipped bytes made a resume pay 977 instead of
// 777, and one undecodable record made List fail for the whole file.
func TestBoltListSkipsADamagedRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	for _, k := range []string{"k1", "k2", "k3"} {
		r := pendingRecord(k, "order-"+k)
		r.Body = []byte(`{"amount":777,"currency":"EUR"}`)
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	flipBytes(t, path, "k2", 2, rand.New(rand.NewPCG(7, 7)))

	s = openBolt(t, path)
	recs, err := s.List(ctx, keystore.Filter{})
	var damaged *keystore.CorruptRecordsError
	require.ErrorAs(t, err, &damaged)
	assert.ErrorIs(t, err, keystore.ErrCorrupt)
	assert.Equal(t, []string{"k2"}, damaged.Keys)
	require.Len(t, damaged.Errs, 1)
	assert.ErrorIs(t, damaged.Errs[0], keystore.ErrCorrupt)
	assert.Contains(t, damaged.Errs[0].Error(), keystore.KeyRef("k2"))
	require.Len(t, recs, 2, "the sound records come back with the error")
	assert.Equal(t, "k1", recs[0].Key)
	assert.Equal(t, "k3", recs[1].Key)
	for _, r := range recs {
		assert.JSONEq(t, `{"amount":777,"currency":"EUR"}`, string(r.Body))
	}

	_, err = s.Get(ctx, "k2")
	assert.ErrorIs(t, err, keystore.ErrCorrupt)
	assert.ErrorContains(t, err, keystore.KeyRef("k2"))
	_, err = s.GetByName(ctx, "order-k2")
	assert.ErrorIs(t, err, keystore.ErrCorrupt)
	_, created, err := s.Create(ctx, pendingRecord("k9", "order-k2"))
	assert.ErrorIs(t, err, keystore.ErrCorrupt, "a damaged name is never begun again under a new key")
	assert.False(t, created)
	_, err = s.Get(ctx, "k1")
	assert.NoError(t, err)
}

// A hundred records, each with two random bits flipped on disk: every one
// is either read back unchanged or reported damaged, none changed.
func TestBoltRandomFlipsNeverChangeARecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	want := map[string]*keystore.Record{}
	for i := range 100 {
		r := pendingRecord(fmt.Sprintf("key-%03d", i), fmt.Sprintf("order-%03d", i))
		r.Body = fmt.Appendf(nil, `{"amount":%d,"to":"127.0.0.1:18%03d"}`, 700+i, i)
		_, _, err := s.Create(ctx, r)
		require.NoError(t, err)
		want[r.Key] = r
	}
	require.NoError(t, s.Close())
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 100))
	for k := range want {
		flipBytes(t, path, k, 2, rng)
	}

	s = openBolt(t, path)
	recs, err := s.List(ctx, keystore.Filter{})
	var damaged *keystore.CorruptRecordsError
	if len(recs) < len(want) {
		require.ErrorAs(t, err, &damaged, "seed %d", seed)
		assert.Len(t, damaged.Keys, len(want)-len(recs), "seed %d", seed)
	}
	for _, r := range recs {
		w := want[r.Key]
		require.NotNil(t, w, "seed %d: a record under a key never written", seed)
		assert.Equal(t, string(w.Body), string(r.Body), "seed %d: %s", seed, r.Key)
		assert.Equal(t, w.Name, r.Name, "seed %d", seed)
		assert.Equal(t, w.URL, r.URL, "seed %d", seed)
	}
	t.Logf("seed %d: %d of %d damaged records detected, %d unchanged", seed, len(want)-len(recs), len(want), len(recs))
}
