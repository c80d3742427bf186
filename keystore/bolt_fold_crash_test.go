package keystore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/internal/testenv"
)

// The fold crash test re-executes the test binary as a child that creates
// records without pause on a bbolt keystore whose log folds every few
// records, a few records a transaction, and SIGKILLs it at a random
// moment, round after round on one file.
const (
	envFoldChild = "IDEM_TEST_FOLD_CRASH_CHILD"
	envFoldDB    = "IDEM_TEST_FOLD_CRASH_DB"
	envFoldRound = "IDEM_TEST_FOLD_CRASH_ROUND"
	foldWorkers  = 4
)

// TestFoldCrashChild is the child: workers create records until the
// kill, each printed once its Create returned. It does nothing in a
// normal run.
func TestFoldCrashChild(t *testing.T) {
	if os.Getenv(envFoldChild) != "1" {
		t.Skip("runs only as the child of TestFoldSurvivesSIGKILL")
	}
	b, err := OpenBolt(os.Getenv(envFoldDB), nil)
	require.NoError(t, err)
	b.foldAt, b.foldBatch = 64, 8
	round := os.Getenv(envFoldRound)
	fmt.Println("ready")
	for w := range foldWorkers {
		go func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("r%s-w%d-%d", round, w, i)
				if _, _, err := b.Create(context.Background(), testRecord(key, "name-"+key)); err != nil {
					panic(err)
				}
				fmt.Println("created", key)
			}
		}()
	}
	select {} // until SIGKILL
}

func TestFoldSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.db")
	ctx := context.Background()
	total := 0
	for round := range 5 {
		created := killFoldChild(t, path, round)
		total += len(created)

		b, err := OpenBolt(path, &BoltOptions{Timeout: 5 * time.Second})
		require.NoError(t, err)
		inLog, inRecords := bucketKeys(t, b)
		for k := range inLog {
			assert.False(t, inRecords[k], "a record in both buckets: %s", k)
		}
		for _, key := range created {
			got, err := b.Get(ctx, key)
			require.NoError(t, err, "a created record survives the kill: %s", key)
			require.Equal(t, "name-"+key, got.Name)
			byName, err := b.GetByName(ctx, "name-"+key)
			require.NoError(t, err)
			require.Equal(t, key, byName.Key)
		}
		list, err := b.List(ctx, Filter{})
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, r := range list {
			require.False(t, seen[r.Key], "listed twice: %s", r.Key)
			seen[r.Key] = true
		}
		assert.Equal(t, len(inLog)+len(inRecords), len(list))
		assert.GreaterOrEqual(t, len(list), total, "every created record, and perhaps some the kill cut off before they were printed")
		t.Logf("round %d: %d created, %d in the log, %d folded", round, len(created), len(inLog), len(inRecords))
		require.NoError(t, b.Close())
	}
}

// killFoldChild runs the child on path and SIGKILLs it at a random moment
// of its run. It returns the keys whose Create had returned in the child.
func killFoldChild(t *testing.T, path string, round int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFoldCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envFoldChild+"=1", envFoldDB+"="+path, fmt.Sprintf("%s=%d", envFoldRound, round))
	lines := testenv.KillAtRandom(t, cmd, 50*time.Millisecond, 300*time.Millisecond)
	var created []string
	for _, line := range lines {
		if key, ok := strings.CutPrefix(line, "created "); ok {
			created = append(created, key)
		}
	}
	require.NotEmpty(t, created, "the child created records before the kill")
	return created
}

// bucketKeys returns the keys of the records in b's log and in its
// records bucket.
func bucketKeys(t *testing.T, b *Bolt) (inLog, inRecords map[string]bool) {
	t.Helper()
	inLog, inRecords = map[string]bool{}, map[string]bool{}
	require.NoError(t, b.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketLog).ForEach(func(k, _ []byte) error {
			inLog[logKeyOf(k)] = true
			return nil
		}); err != nil {
			return err
		}
		return tx.Bucket(bucketRecords).ForEach(func(k, _ []byte) error {
			inRecords[string(k)] = true
			return nil
		})
	}))
	return inLog, inRecords
}
