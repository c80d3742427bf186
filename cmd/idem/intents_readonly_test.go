package main

import (
	"encoding/binary"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// The fault as seen: list and show opened the keystore read-write (they
// failed on a read-only mount, and a damaged file grew to 2 TiB). A file
// of format 1, which a read-write open migrates, shows any write: list
// and show leave its bytes, size and time as they were.
func TestReadCommands_NeverWriteTheKeystore(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	db, err := bolt.Open(p.path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error { // an earlier build's layout: no log
		if err := tx.DeleteBucket([]byte("log")); err != nil {
			return err
		}
		return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{1})
	}))
	require.NoError(t, db.Close())
	testenv.Backdate(t, p.path)
	before := testenv.StateOf(t, p.path)

	in := p.all()[0]
	for _, args := range [][]string{
		{"list"}, {"list", "--json"}, {"show", in.Key}, {"show", in.Name, "--json"},
	} {
		stdout, stderr, err := runIntentsCLI(t, nil, append(args, "--keystore", p.path)...)
		require.NoError(t, err, "%v: %s", args, stderr)
		assert.Contains(t, stdout, in.Key, "%v", args)
		assert.Equal(t, before, testenv.StateOf(t, p.path), "%v changed the keystore file", args)
	}
}

// The fault as seen: zeroing the newest meta page made list show the file
// as of the commit before, silently. Now list and show refuse it in one
// line that says what to do; --accept-older-meta shows the older state,
// still without writing.
func TestReadCommands_DamagedMetaPageIsRefusedUnlessAccepted(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	data, err := os.ReadFile(p.path)
	require.NoError(t, err)
	ps := int64(binary.NativeEndian.Uint32(data[16+8:]))
	newest := int64(0)
	if binary.NativeEndian.Uint64(data[ps+16+48:]) > binary.NativeEndian.Uint64(data[16+48:]) {
		newest = ps
	}
	f, err := os.OpenFile(p.path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, ps), newest)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	testenv.Backdate(t, p.path)
	before := testenv.StateOf(t, p.path)

	for _, args := range [][]string{{"list"}, {"show", p.all()[0].Key}} {
		_, stderr, err := runIntentsCLI(t, nil, append(args, "--keystore", p.path)...)
		requireOneLineError(t, stderr, err)
		assert.ErrorIs(t, err, keystore.ErrMetaDamaged)
		assert.Contains(t, stderr, "damaged meta page")
		assert.Contains(t, stderr, "--accept-older-meta")
	}
	stdout, stderr, err := runIntentsCLI(t, nil, "list", "--accept-older-meta", "--keystore", p.path)
	require.NoError(t, err, stderr)
	assert.Equal(t, 1+len(p.all()), strings.Count(stdout, "\n"), "the commit before the last (the fold at close) holds them all:\n%s", stdout)
	assert.Equal(t, before, testenv.StateOf(t, p.path))
}
