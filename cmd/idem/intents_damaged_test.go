package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

// damageRecord flips two bytes of the stored record with key, through
// bbolt's own API, as damage on disk would.
func damageRecord(t *testing.T, path, key string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("records"))
		v := append([]byte(nil), b.Get([]byte(key))...)
		require.NotEmpty(t, v)
		v[len(v)-20] ^= 0x0e
		v[len(v)-30] ^= 0x01
		return b.Put([]byte(key), v)
	}))
}

// One undecodable record used to fail `intents list` for the whole file.
func TestList_ShowsTheSoundRowsAndNamesTheDamagedOnes(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	bad, badName := p.succeeded[1].Key, p.succeeded[1].Name
	damageRecord(t, p.path, bad)

	stdout, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", p.path)
	require.Error(t, err, "a partial listing is not a success")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	assert.Len(t, lines, 1+4, "the header and the four sound intents:\n%s", stdout)
	assert.NotContains(t, stdout, bad)
	errLines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, errLines, 2, stderr)
	assert.Equal(t, "damaged record "+bad+" ("+badName+"): fails its checksum", errLines[0], "named by its key and name")
	assert.True(t, strings.HasPrefix(errLines[1], "Error: 1 damaged record in "+p.path+" left out"), errLines[1])
	assert.True(t, strings.HasSuffix(errLines[1], "idem intents repair "+bad+" --export FILE --yes"), "the command that repairs it: %s", errLines[1])

	stdout, stderr, err = runIntentsCLI(t, nil, "list", "--keystore", p.path, "--json")
	require.Error(t, err)
	assert.Equal(t, 4, strings.Count(stdout, `"key"`), "JSON of the sound intents:\n%s", stdout)
	assert.Contains(t, stderr, "damaged record "+bad+" ("+badName+")")

	_, stderr, err = runIntentsCLI(t, nil, "show", "--keystore", p.path, bad)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "is damaged: fails its checksum")
	assert.Contains(t, stderr, "idem intents repair "+bad)

	_, stderr, err = runIntentsCLI(t, nil, "purge", "--keystore", p.path, "--older-than", "1ms", "--force", "--dry-run")
	require.Error(t, err)
	assert.Contains(t, stderr, "damaged record "+bad)

	// The sound records are untouched and still read one by one.
	st, err := keystore.OpenBolt(p.path, nil)
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Get(context.Background(), p.succeeded[0].Key)
	assert.NoError(t, err)
}
