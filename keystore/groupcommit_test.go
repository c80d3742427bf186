package keystore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

func openTestBolt(t *testing.T) *Bolt {
	t.Helper()
	b, err := OpenBolt(filepath.Join(t.TempDir(), "keys.db"), &BoltOptions{Timeout: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func testRecord(key, name string) *Record {
	now := time.Now().UTC()
	return &Record{Key: key, Name: name, Method: "POST", URL: "https://api.example.com/v1/payments",
		State: Pending, CreatedAt: now, UpdatedAt: now}
}

// holdTurn takes the committer's turn as a running commit would, so that
// writes queue up behind it; the returned func hands the turn back.
func holdTurn(c *committer) (release func()) {
	c.turn <- struct{}{}
	return func() { <-c.turn }
}

// waitQueued waits until n writes are queued.
func waitQueued(t *testing.T, c *committer, n int) {
	t.Helper()
	for {
		c.mu.Lock()
		l := len(c.queue)
		c.mu.Unlock()
		if l >= n {
			require.Equal(t, n, l)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func TestCommitterLoneWritesCommitOneEach(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	ctx := context.Background()
	for i := range 5 {
		_, _, err := b.Create(ctx, testRecord(fmt.Sprint("k", i), ""))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(5), b.writes.commits.Load())

	// A create of a known name is answered without a write transaction.
	_, _, err := b.Create(ctx, testRecord("n1", "name"))
	require.NoError(t, err)
	_, created, err := b.Create(ctx, testRecord("n2", "name"))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, int64(6), b.writes.commits.Load())
}

func TestCommitterFoldsQueuedWritesIntoOneCommit(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	ctx := context.Background()
	_, _, err := b.Create(ctx, testRecord("taken", ""))
	require.NoError(t, err)
	require.NoError(t, b.Update(ctx, testRecord("taken", "")))
	before := b.writes.commits.Load()

	release := holdTurn(b.writes)
	type outcome struct {
		key     string
		created bool
		err     error
	}
	writes := []*Record{
		testRecord("a", ""), testRecord("b", "shared"), testRecord("taken", ""),
		testRecord("c", "shared"), testRecord("d", ""), testRecord("e", "own"),
	}
	outcomes := make([]outcome, len(writes)+1)
	var wg sync.WaitGroup
	for i, r := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, created, err := b.Create(ctx, r)
			if rec != nil {
				outcomes[i] = outcome{rec.Key, created, err}
			} else {
				outcomes[i] = outcome{"", created, err}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		outcomes[len(writes)] = outcome{err: b.Update(ctx, testRecord("missing", ""))}
	}()
	waitQueued(t, b.writes, len(writes)+1)
	release()
	wg.Wait()

	assert.Equal(t, before+1, b.writes.commits.Load(), "one transaction for the whole queue")
	assert.Equal(t, outcome{"a", true, nil}, outcomes[0])
	assert.ErrorIs(t, outcomes[2].err, ErrDuplicateKey, "the duplicate fails alone")
	assert.Equal(t, outcome{"d", true, nil}, outcomes[4])
	assert.Equal(t, outcome{"e", true, nil}, outcomes[5])
	assert.ErrorIs(t, outcomes[6].err, ErrNotFound)
	// Two creates of one name in one transaction: the first stores, the
	// second sees it.
	shared := []outcome{outcomes[1], outcomes[3]}
	require.NoError(t, shared[0].err)
	require.NoError(t, shared[1].err)
	assert.Equal(t, shared[0].key, shared[1].key)
	assert.NotEqual(t, shared[0].created, shared[1].created)

	all, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, all, 5, "taken, a, d, e and one of b/c")
}

func TestCommitterWithdrawsCanceledQueuedWrite(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	release := holdTurn(b.writes)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, err := b.Create(ctx, testRecord("k1", ""))
		errc <- err
	}()
	waitQueued(t, b.writes, 1)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	waitQueued(t, b.writes, 0)
	release()

	_, err := b.Get(context.Background(), "k1")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Zero(t, b.writes.commits.Load())
}

func TestCommitterReportsTakenWriteDespiteCancel(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	c := b.writes
	inApply, unblock := make(chan struct{}), make(chan struct{})
	slow := func(tx *bolt.Tx) (bool, error) {
		close(inApply)
		<-unblock
		return true, tx.Bucket(bucketRecords).Put([]byte("slow"), []byte{recordEncodingV1})
	}
	quick := func(tx *bolt.Tx) (bool, error) {
		return true, tx.Bucket(bucketRecords).Put([]byte("quick"), []byte{recordEncodingV1})
	}
	release := holdTurn(c)
	ctx, cancel := context.WithCancel(context.Background())
	slowErr, quickErr := make(chan error, 1), make(chan error, 1)
	go func() { slowErr <- c.submit(context.Background(), slow) }()
	waitQueued(t, c, 1)
	go func() { quickErr <- c.submit(ctx, quick) }()
	waitQueued(t, c, 2)
	release()
	<-inApply // a leader took both writes and is running them
	cancel()
	close(unblock)
	assert.NoError(t, <-slowErr)
	assert.NoError(t, <-quickErr, "a write a leader took is reported as committed")
	assert.Equal(t, int64(1), c.commits.Load())
	require.NoError(t, b.db.View(func(tx *bolt.Tx) error {
		assert.NotNil(t, tx.Bucket(bucketRecords).Get([]byte("quick")))
		return nil
	}))
}

func TestCommitterFailedCommitFailsEveryWrite(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	release := holdTurn(b.writes)
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, _, err := b.Create(context.Background(), testRecord(fmt.Sprint("k", i), ""))
			errs <- err
		}()
	}
	waitQueued(t, b.writes, 3)
	require.NoError(t, b.db.Close()) // the file goes away under the queued writes
	release()
	for range 3 {
		err := <-errs
		require.Error(t, err)
		assert.Contains(t, err.Error(), "commit to "+b.path)
		assert.True(t, errors.Is(err, berrors.ErrDatabaseNotOpen), err)
	}
}

// gathering reports whether a leader waits for the queue to fill.
func gathering(c *committer) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.want > 0
}

// After a big commit, a leader that finds only a few writers back waits
// for the rest of them (up to three quarters of the big batch) and commits
// them all at once, instead of committing the first few alone.
func TestCommitterGathersTheWritersOfABigBatch(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	c := b.writes
	ctx := context.Background()
	release := holdTurn(c)
	// As after a commit of 8 writes; a long one, with the cap on the wait
	// lifted, so the wait cannot run out on a loaded machine.
	c.peakBatch, c.lastCommit, c.maxGather = 8, time.Minute, time.Minute
	before := c.commits.Load()
	var wg sync.WaitGroup
	create := func(key string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, created, err := b.Create(ctx, testRecord(key, ""))
			assert.NoError(t, err)
			assert.True(t, created)
		}()
	}
	create("first-0")
	create("first-1")
	waitQueued(t, c, 2)
	release()
	require.Eventually(t, func() bool { return gathering(c) }, 30*time.Second, time.Millisecond, "the leader gathers")
	for i := range 4 {
		create(fmt.Sprint("later-", i))
	}
	wg.Wait()
	assert.Equal(t, before+1, c.commits.Load(), "the two first writes wait for the four later ones: one commit")
	all, err := b.List(ctx, Filter{})
	require.NoError(t, err)
	assert.Len(t, all, 6)
}

// A writer left alone after a burst waits for its peers once, at most as
// long as the last commit took; the wait that runs out tells the leader
// that the writers are gone, and the next write commits at once.
func TestCommitterLoneWriterAfterABurstWaitsOnce(t *testing.T) {
	t.Parallel()
	b := openTestBolt(t)
	c := b.writes
	ctx := context.Background()
	release := holdTurn(c)
	c.peakBatch, c.lastCommit = 64, 20*time.Millisecond
	release()
	_, _, err := b.Create(ctx, testRecord("alone", ""))
	require.NoError(t, err)
	holdTurn(c)() // the turn is free again: the commit's state is the leader's no more
	assert.Equal(t, 1, c.peakBatch, "the wait ran out with one write: no more are expected")
	_, _, err = b.Create(ctx, testRecord("alone-again", ""))
	require.NoError(t, err)
	assert.Equal(t, 1, c.peakBatch)
}
