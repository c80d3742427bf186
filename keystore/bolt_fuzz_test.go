package keystore_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemkit/idem/keystore"
)

// FuzzOpenBolt hands OpenBolt arbitrary file contents, seeded with a sound
// keystore so that mutations reach the data pages behind valid meta pages.
// Whatever the bytes, opening the file (read-only and read-write),
// reading it, writing to it and closing it must end in a result or an
// error, never a panic, a crash or a hang; a refused file is ErrCorrupt.
//
// Each input is bounded by the page check OpenBolt runs before bbolt
// reads the file (checkPages): time and memory in proportion to the
// file's size. Should that bound ever fail, the input still ends: it runs
// in a goroutine the target stops waiting for after fuzzHang, failing
// with the input saved, instead of stalling the fuzzing worker (before
// the check, inputs that looped inside bbolt's cursor held workers for
// minutes, which made the target run 17–167 inputs a minute).
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
	ps := int(binary.NativeEndian.Uint32(valid[16+8:]))
	for p := 2; (p+1)*ps <= len(valid); p++ { // every page's type byte
		for _, flag := range []byte{0x01, 0x02, 0x04, 0x10} {
			m := append([]byte(nil), valid...)
			m[p*ps+8] = flag
			f.Add(m)
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, ro := range []bool{true, false} {
				path := filepath.Join(dir, fmt.Sprintf("keys-%t.db", ro))
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Error(err)
					return
				}
				fuzzOpenOnce(t, path, ro)
			}
		}()
		hang := time.NewTimer(fuzzHang)
		defer hang.Stop()
		select {
		case <-done:
		case <-hang.C:
			t.Fatalf("open, read, write and close of %d bytes did not end in %s", len(data), fuzzHang)
		}
	})
}

// fuzzHang bounds one input of FuzzOpenBolt: far beyond what any input
// takes (milliseconds), so only a loop reaches it.
const fuzzHang = 20 * time.Second

// fuzzOpenOnce opens the file at path, reads it, writes a record unless
// read-only, and closes it; every failure must be damage or absence (or
// ErrReadOnly).
func fuzzOpenOnce(t *testing.T, path string, ro bool) {
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond, NoSync: true, ReadOnly: ro})
	if err != nil {
		if !errors.Is(err, keystore.ErrCorrupt) {
			t.Errorf("open (read-only %t): %v", ro, err)
		}
		return
	}
	ctx := context.Background()
	allowed := func(err error) {
		if err != nil && !errors.Is(err, keystore.ErrCorrupt) && !errors.Is(err, keystore.ErrNotFound) &&
			!errors.Is(err, keystore.ErrReadOnly) {
			t.Errorf("unexpected error (read-only %t): %v", ro, err)
		}
	}
	_, err = s.List(ctx, keystore.Filter{})
	allowed(err)
	_, err = s.Get(ctx, "k1")
	allowed(err)
	_, err = s.GetByName(ctx, "name-k2")
	allowed(err)
	_, _, err = s.Create(ctx, pendingRecord("fuzz", "name-fuzz"))
	allowed(err)
	allowed(s.Close())
}
