package keystore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// FuzzOpenBolt hands OpenBolt arbitrary file contents, seeded with a sound
// keystore so that mutations reach the data pages behind valid meta pages.
// Whatever the bytes, opening the file and reading it must end in a result
// or an error, never a panic or a crash; a refused file is ErrCorrupt.
//
// Writes are left out on purpose: on a file whose data pages are damaged
// behind valid checksums, bbolt may write as much as the damage claims
// (gigabytes), which is bbolt's behaviour and not what this target checks.
func FuzzOpenBolt(f *testing.F) {
	valid := validKeystoreBytes(f)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(valid[:4096])
	f.Add([]byte{})
	f.Add([]byte("not a database"))
	f.Add(make([]byte, 16384))
	damaged := append([]byte(nil), valid...)
	for i := 8192; i < len(damaged); i += 7 {
		damaged[i] ^= 0x5a
	}
	f.Add(damaged)

	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "keys.db")
		require.NoError(t, os.WriteFile(path, data, 0o600))
		s, err := keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond, NoSync: true})
		if err != nil {
			require.ErrorIs(t, err, keystore.ErrCorrupt)
			return
		}
		defer s.Close()
		ctx := context.Background()
		// Every read may fail on a damaged file; none may panic, and a
		// failure is damage or absence, nothing else.
		allowed := func(err error) {
			if err != nil && !errors.Is(err, keystore.ErrCorrupt) && !errors.Is(err, keystore.ErrNotFound) {
				t.Fatalf("unexpected error: %v", err)
			}
		}
		_, err = s.List(ctx, keystore.Filter{})
		allowed(err)
		_, err = s.Get(ctx, "k1")
		allowed(err)
		_, err = s.GetByName(ctx, "name-k2")
		allowed(err)
	})
}
