package keystore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

// FuzzOpenBolt damages a sound keystore file and hands it to OpenBolt:
// edits is read 4 bytes at a time, a file offset (3 bytes, big-endian,
// modulo the file's size) and the byte put there; 3 bytes left over cut
// the file to that length; base picks the file (3 records, or 40 with
// branch pages). Whatever the damage, opening the file (read-only and
// read-write), reading it, writing to it and closing it must end in a
// result or an error, never a panic, a crash or a hang; a refused file is
// ErrCorrupt. FuzzBoltFileBytes hands it arbitrary bytes instead.
//
// An input is a few bytes, not a file: the fuzzer minimizes every input
// that finds new code in up to n² runs of the target, and an 8 KiB file
// kept both workers minimizing for whole minutes (the target ran about
// 1,800 times a second, the fuzzer counted 400 runs a minute).
//
// Each run is bounded by the page check OpenBolt makes before bbolt reads
// the file (checkPages): time and memory in proportion to the file's
// size. Should that bound ever fail, the run still ends: it runs in a
// goroutine the target stops waiting for after fuzzHang, failing with the
// input saved, instead of stalling the worker (before the check, inputs
// that looped inside bbolt's cursor held workers for minutes, which made
// the target run 17–167 inputs a minute).
func FuzzOpenBolt(f *testing.F) {
	bases := [][]byte{
		smallPageKeystore(f, validKeystoreBytes(f), 3),
		smallPageKeystore(f, keystoreBytesWith(f, 40), 40),
	}
	f.Add(byte(0), []byte{})
	f.Add(byte(1), []byte{})
	for b, base := range bases {
		ps := int(binary.NativeEndian.Uint32(base[16+8:]))
		for p := 0; (p+1)*ps <= len(base); p++ { // every page's type byte, count, a first element
			for _, e := range [][2]int{{8, 0x01}, {8, 0x02}, {8, 0x10}, {11, 0x40}, {16 + 15, 0x64}} {
				at := p*ps + e[0]
				f.Add(byte(b), []byte{byte(at >> 16), byte(at >> 8), byte(at), byte(e[1])})
			}
		}
		half := len(base) / 2
		f.Add(byte(b), []byte{byte(half >> 16), byte(half >> 8), byte(half)}) // cut in half
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, base byte, edits []byte) {
		data := bytes.Clone(bases[int(base)%len(bases)])
		for ; len(edits) >= 4; edits = edits[4:] {
			data[(int(edits[0])<<16|int(edits[1])<<8|int(edits[2]))%len(data)] = edits[3]
		}
		if len(edits) == 3 {
			data = data[:(int(edits[0])<<16|int(edits[1])<<8|int(edits[2]))%(len(data)+1)]
		}
		fuzzFile(t, dir, data)
	})
}

// FuzzBoltFileBytes hands OpenBolt arbitrary file contents, seeded with
// sound keystores: see FuzzOpenBolt, whose inputs are edits of them.
func FuzzBoltFileBytes(f *testing.F) {
	valid := smallPageKeystore(f, validKeystoreBytes(f), 3)
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte{})
	f.Add([]byte("not a database"))
	f.Add(make([]byte, 16384))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) { fuzzFile(t, dir, data) })
}

// fuzzFile writes data into dir (one worker's, whose inputs run one at a
// time: a directory made and removed per input would cost more than most
// inputs do), then opens it read-only and read-write (fuzzOpenOnce),
// waiting at most fuzzHang.
func fuzzFile(t *testing.T, dir string, data []byte) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := filepath.Join(dir, "keys.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Error(err)
			return
		}
		fuzzOpenOnce(t, path, true) // writes nothing: the same bytes next
		fuzzOpenOnce(t, path, false)
	}()
	hang := time.NewTimer(fuzzHang)
	defer hang.Stop()
	select {
	case <-done:
	case <-hang.C:
		t.Fatalf("open, read, write and close of %d bytes did not end in %s", len(data), fuzzHang)
	}
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

// smallPageKeystore returns the keystore in data, holding records,
// rewritten with 1 KiB pages and cut to its pages in use (about 8 KiB
// instead of 32 for 3 records): smaller files, faster runs, and page
// splits (branch pages) from fewer records.
func smallPageKeystore(tb testing.TB, data []byte, records int) []byte {
	dir := tb.TempDir()
	srcPath, dstPath := filepath.Join(dir, "src.db"), filepath.Join(dir, "dst.db")
	if err := os.WriteFile(srcPath, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	src, err := bolt.Open(srcPath, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer src.Close()
	dst, err := bolt.Open(dstPath, 0o600, &bolt.Options{PageSize: 1024, NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	if err := bolt.Compact(dst, src, 0); err != nil {
		tb.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		tb.Fatal(err)
	}
	out, err := os.ReadFile(dstPath)
	if err != nil {
		tb.Fatal(err)
	}
	hwm := max(binary.NativeEndian.Uint64(out[16+40:]), binary.NativeEndian.Uint64(out[1024+16+40:]))
	out = out[:hwm*1024]
	// Still a sound keystore, or the seeds would test only refusals.
	if err := os.WriteFile(dstPath, out, 0o600); err != nil {
		tb.Fatal(err)
	}
	s, err := keystore.OpenBolt(dstPath, &keystore.BoltOptions{ReadOnly: true})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	if recs, err := s.List(context.Background(), keystore.Filter{}); err != nil || len(recs) != records {
		tb.Fatalf("the small-page keystore lists %d records, %v", len(recs), err)
	}
	return out
}

// keystoreBytesWith returns the bytes of a closed keystore holding n
// records with names.
func keystoreBytesWith(tb testing.TB, n int) []byte {
	path := filepath.Join(tb.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		if _, _, err := s.Create(context.Background(), pendingRecord(fmt.Sprintf("k%02d", i), fmt.Sprintf("name-k%02d", i))); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
