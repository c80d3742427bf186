package keystore_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/storetest"
)

func TestBoltContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) keystore.Store {
		s, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "keys.db"), nil)
		require.NoError(t, err)
		return s
	})
}

// openBolt opens a keystore at path and closes it when the test ends.
func openBolt(t *testing.T, path string) *keystore.Bolt {
	t.Helper()
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func pendingRecord(key, name string) *keystore.Record {
	now := time.Now().UTC().Truncate(time.Microsecond)
	return &keystore.Record{
		Key: key, Name: name, Method: "POST", URL: "https://api.example.com/v1/payments",
		Body: []byte(`{"amount":1000}`), Fingerprint: "fp", State: keystore.Pending,
		CreatedAt: now, UpdatedAt: now,
	}
}

func TestBoltSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	assert.Equal(t, path, s.Path())
	r := pendingRecord("k1", "order-1")
	_, _, err = s.Create(ctx, r)
	require.NoError(t, err)
	r.State, r.Attempts = keystore.Failed, 3
	require.NoError(t, s.Update(ctx, r))
	require.NoError(t, s.Close())

	s = openBolt(t, path)
	got, err := s.GetByName(ctx, "order-1")
	require.NoError(t, err)
	assert.Equal(t, "k1", got.Key)
	assert.Equal(t, keystore.Failed, got.State)
	assert.Equal(t, 3, got.Attempts)
	assert.True(t, r.CreatedAt.Equal(got.CreatedAt))
}

func TestBoltFileMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	def := openBolt(t, filepath.Join(dir, "default.db"))
	info, err := os.Stat(def.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	custom, err := keystore.OpenBolt(filepath.Join(dir, "custom.db"), &keystore.BoltOptions{Mode: 0o640})
	require.NoError(t, err)
	t.Cleanup(func() { _ = custom.Close() })
	info, err = os.Stat(custom.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), info.Mode().Perm())

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file is left behind")
}

func TestBoltClosedUnlocksFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	_, err = keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, keystore.ErrLocked, "a second open of a held file waits, then fails")
	require.NoError(t, s.Close())
	openBolt(t, path)
}

func TestBoltRejectsForeignAndDamagedFiles(t *testing.T) {
	t.Parallel()
	valid := validKeystoreBytes(t)
	cases := map[string]func(t *testing.T, path string){
		"random bytes": func(t *testing.T, path string) {
			junk := make([]byte, 64<<10)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range junk {
				junk[i] = byte(rng.Uint32())
			}
			writeFile(t, path, junk)
		},
		"text file":      func(t *testing.T, path string) { writeFile(t, path, []byte("hello, keystore\n")) },
		"zero length":    func(t *testing.T, path string) { writeFile(t, path, nil) },
		"truncated":      func(t *testing.T, path string) { writeFile(t, path, valid[:len(valid)/2]) },
		"only meta page": func(t *testing.T, path string) { writeFile(t, path, valid[:5000]) },
		"empty bbolt file of another program": func(t *testing.T, path string) {
			rawBolt(t, path, func(tx *bolt.Tx) error { return nil })
		},
		"bbolt file with other buckets": func(t *testing.T, path string) {
			rawBolt(t, path, func(tx *bolt.Tx) error {
				b, err := tx.CreateBucket([]byte("widgets"))
				if err != nil {
					return err
				}
				return b.Put([]byte("w1"), []byte("blue"))
			})
		},
		"newer format version": func(t *testing.T, path string) {
			writeFile(t, path, valid)
			rawBolt(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte("meta")).Put([]byte("version"), []byte{99})
			})
		},
		"missing records bucket": func(t *testing.T, path string) {
			writeFile(t, path, valid)
			rawBolt(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("records")) })
		},
	}
	for name, prepare := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "keys.db")
			prepare(t, path)
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			s, err := keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond})
			require.ErrorIs(t, err, keystore.ErrCorrupt)
			assert.Nil(t, s)
			assert.Contains(t, err.Error(), path)

			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(before, after), "a refused file is left untouched")
			// The refusal released the file: the lock is free again.
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		})
	}
}

func TestBoltRejectsDirectory(t *testing.T) {
	t.Parallel()
	_, err := keystore.OpenBolt(t.TempDir(), nil)
	require.Error(t, err)
	assert.NotErrorIs(t, err, keystore.ErrCorrupt, "an I/O error is not damage")
	_, err = keystore.OpenBolt("", nil)
	require.Error(t, err)
}

func TestBoltCorruptRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	_, _, err = s.Create(ctx, pendingRecord("good", "n-good"))
	require.NoError(t, err)
	const bad = "DAMAGED-KEY"
	_, _, err = s.Create(ctx, pendingRecord(bad, "n-bad"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	rawBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("records")).Put([]byte(bad), []byte{1, '{', 'x'})
	})

	s = openBolt(t, path)
	got, err := s.Get(ctx, "good")
	require.NoError(t, err, "sound records stay readable")
	assert.Equal(t, "good", got.Key)

	_, err = s.Get(ctx, bad)
	require.ErrorIs(t, err, keystore.ErrCorrupt)
	assert.Contains(t, err.Error(), "record key#", "the error says which record")
	assert.NotContains(t, err.Error(), bad, "the error never reveals the raw key")
	_, err = s.GetByName(ctx, "n-bad")
	assert.ErrorIs(t, err, keystore.ErrCorrupt)
	recs, err := s.List(ctx, keystore.Filter{})
	assert.ErrorIs(t, err, keystore.ErrCorrupt, "List does not hide a damaged intent")
	assert.NotContains(t, err.Error(), bad)
	var damaged *keystore.CorruptRecordsError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, []string{bad}, damaged.Keys)
	require.Len(t, recs, 1, "nor does it hide the sound ones")
	assert.Equal(t, "good", recs[0].Key)
	r := pendingRecord(bad, "n-bad")
	assert.ErrorIs(t, s.Update(ctx, r), keystore.ErrCorrupt)
	_, _, err = s.Create(ctx, pendingRecord("other", "n-bad"))
	assert.ErrorIs(t, err, keystore.ErrCorrupt)
	_, err = s.Purge(ctx, keystore.PurgeRequest{OlderThan: time.Now().Add(time.Hour)})
	require.ErrorAs(t, err, &damaged, "a purge leaves a damaged record alone and says so")
	assert.Equal(t, []string{bad}, damaged.Keys)
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, 0o600))
}

// rawBolt runs fn in a write transaction on the bbolt file at path, as
// another program (or damage) would.
func rawBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, db.Update(fn))
	require.NoError(t, db.Close())
}

// validKeystoreBytes returns the bytes of a keystore holding a few records.
func validKeystoreBytes(t testing.TB) []byte {
	path := filepath.Join(t.TempDir(), "valid.db")
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	ctx := context.Background()
	for _, k := range []string{"k1", "k2", "k3"} {
		_, _, err := s.Create(ctx, pendingRecord(k, "name-"+k))
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// The tests below run a second process: the test binary itself, started
// with helperModeEnv set, runs TestBoltHelperProcess only.
const (
	helperModeEnv = "IDEM_KEYSTORE_HELPER_MODE"
	helperPathEnv = "IDEM_KEYSTORE_HELPER_PATH"
)

// TestBoltHelperProcess is the child side: it opens the keystore, in mode
// "create" stores a record, prints "ready" and holds the file until its
// stdin closes (or it is killed).
func TestBoltHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		t.Skip("runs only as the child process of other tests")
	}
	s, err := keystore.OpenBolt(os.Getenv(helperPathEnv), nil)
	require.NoError(t, err)
	defer s.Close()
	if mode == "create" {
		_, _, err := s.Create(context.Background(), pendingRecord("survivor", "crash-test"))
		require.NoError(t, err)
	}
	_, err = os.Stdout.WriteString("ready\n")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startHelper starts the child process in mode on path and waits for its
// "ready". Closing the returned stdin lets the child finish.
func startHelper(t *testing.T, mode, path string) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperPathEnv+"="+path)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "child-stderr"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stderr.Close() })
	cmd.Stderr = stderr
	childLog := func() string { b, _ := os.ReadFile(stderr.Name()); return string(b) }
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		require.FailNow(t, "child did not get ready", "read %q, %v; child stderr:\n%s", line, err, childLog())
	}
	return cmd, stdin
}

func TestBoltLockedByAnotherProcess(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	cmd, stdin := startHelper(t, "hold", path)

	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, keystore.ErrLocked)
	assert.Nil(t, s)
	assert.Contains(t, err.Error(), path)

	require.NoError(t, stdin.Close())
	require.NoError(t, cmd.Wait(), "child exits cleanly once released")
	openBolt(t, path)
}

func TestBoltCreateSurvivesKill(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	cmd, _ := startHelper(t, "create", path)
	require.NoError(t, cmd.Process.Kill()) // SIGKILL: no deferred Close runs
	_ = cmd.Wait()

	s := openBolt(t, path)
	got, err := s.GetByName(context.Background(), "crash-test")
	require.NoError(t, err, "a Create that returned is on disk")
	assert.Equal(t, "survivor", got.Key)
	assert.Equal(t, keystore.Pending, got.State)
}
