package pgkeystore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

func TestPostgresClaimEveryRecordExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	// Two pools stand for two processes on different hosts.
	stores := []*Store{openPostgresIn(t, schema, nil), openPostgresIn(t, schema, nil)}
	keys := seedPending(t, stores[0], 200)
	final := pendingRecord(500)
	final.State = keystore.Succeeded
	_, _, err := stores[0].Create(ctx, final)
	require.NoError(t, err)

	const workers = 8
	claimed := make([][]*keystore.Record, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("worker-%d", w)
			for {
				recs, err := stores[w%2].Claim(ctx, owner, time.Minute, 7)
				if err != nil {
					errs[w] = err
					return
				}
				if len(recs) == 0 {
					return
				}
				claimed[w] = append(claimed[w], recs...)
			}
		}()
	}
	wg.Wait()

	times := make(map[string]int)
	for w := range workers {
		require.NoError(t, errs[w])
		for _, r := range claimed[w] {
			times[r.Key]++
			assert.Equal(t, keystore.Pending, r.State)
		}
	}
	assert.Len(t, times, len(keys), "every pending record was claimed")
	for _, k := range keys {
		assert.Equal(t, 1, times[k], "record %s claimed once", k)
	}
	assert.NotContains(t, times, final.Key, "final records are never claimed")

	more, err := stores[1].Claim(ctx, "late-worker", time.Minute, 10)
	require.NoError(t, err)
	assert.Empty(t, more, "live claims keep records from other owners")
}

func TestPostgresClaimTakesAcceptedRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openPostgresIn(t, newPostgresTestSchema(t), nil)
	accepted := pendingRecord(1)
	accepted.State = keystore.Accepted
	failed := pendingRecord(2)
	failed.State = keystore.Failed
	for _, r := range []*keystore.Record{accepted, failed} {
		_, _, err := p.Create(ctx, r)
		require.NoError(t, err)
	}

	recs, err := p.Claim(ctx, "poller", time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1, "an accepted operation still needs a worker to poll it; a failed one does not")
	assert.Equal(t, accepted.Key, recs[0].Key)
}

func TestPostgresCrashedWorkersClaimsExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	crashed := openPostgresIn(t, schema, nil)
	survivor := openPostgresIn(t, schema, nil)
	keys := seedPending(t, crashed, 10)

	recs, err := crashed.Claim(ctx, "crashed", 200*time.Millisecond, 100)
	require.NoError(t, err)
	require.Len(t, recs, 10)
	// The worker dies: it never unclaims and its connections go away.
	require.NoError(t, crashed.Close())

	got := make(map[string]bool)
	require.Eventually(t, func() bool {
		recs, err := survivor.Claim(ctx, "survivor", time.Minute, 100)
		if !assert.NoError(t, err) {
			return false
		}
		for _, r := range recs {
			got[r.Key] = true
		}
		return len(got) == len(keys)
	}, 10*time.Second, 20*time.Millisecond, "the crashed worker's claims must expire")

	// A stale owner coming back cannot release the survivor's claim.
	stale := openPostgresIn(t, schema, nil)
	require.NoError(t, stale.Unclaim(ctx, keys[0], "crashed"))
	ok, err := stale.ClaimKey(ctx, keys[0], "third", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestPostgresClaimKeyIsExclusive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	a := openPostgresIn(t, schema, nil)
	b := openPostgresIn(t, schema, nil)
	keys := seedPending(t, a, 2)
	k := keys[0]

	ok, err := a.ClaimKey(ctx, k, "a", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = b.ClaimKey(ctx, k, "b", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "a live claim keeps other owners out")
	ok, err = a.ClaimKey(ctx, k, "a", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok, "the owner may renew")

	recs, err := b.Claim(ctx, "b", time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1, "Claim passes over records claimed by key")
	assert.Equal(t, keys[1], recs[0].Key)

	require.NoError(t, b.Unclaim(ctx, k, "b"), "releasing a claim one does not hold is a no-op")
	ok, err = b.ClaimKey(ctx, k, "b", time.Minute)
	require.NoError(t, err)
	assert.False(t, ok, "a no-op release must not free another owner's claim")

	require.NoError(t, a.Unclaim(ctx, k, "a"))
	ok, err = b.ClaimKey(ctx, k, "b", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)

	_, err = a.ClaimKey(ctx, "no-such-key", "a", time.Minute)
	assert.ErrorIs(t, err, keystore.ErrNotFound)
	assert.ErrorIs(t, a.Unclaim(ctx, "no-such-key", "a"), keystore.ErrNotFound)
}

func TestPostgresClaimKeyRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	stores := []*Store{openPostgresIn(t, schema, nil), openPostgresIn(t, schema, nil)}
	k := seedPending(t, stores[0], 1)[0]

	const n = 16
	won := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won[i], errs[i] = stores[i%2].ClaimKey(ctx, k, fmt.Sprintf("w%d", i), time.Minute)
		}()
	}
	wg.Wait()
	winners := 0
	for i := range n {
		require.NoError(t, errs[i])
		if won[i] {
			winners++
		}
	}
	assert.Equal(t, 1, winners)
}

func TestPostgresClaimOrderAndLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	// Created newest first, so the order comes from CreatedAt, not insertion.
	for i := 9; i >= 0; i-- {
		_, _, err := p.Create(ctx, pendingRecord(i))
		require.NoError(t, err)
	}

	recs, err := p.Claim(ctx, "w", time.Minute, 4)
	require.NoError(t, err)
	require.Len(t, recs, 4)
	for i, r := range recs {
		assert.Equal(t, pendingRecord(i).Key, r.Key)
		assert.Equal(t, pendingRecord(i).Body, r.Body)
	}
}

func TestPostgresClaimRejectsBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	k := seedPending(t, p, 1)[0]

	_, err := p.Claim(ctx, "", time.Minute, 1)
	assert.ErrorContains(t, err, "empty owner")
	_, err = p.Claim(ctx, "w", 0, 1)
	assert.ErrorContains(t, err, "lease")
	_, err = p.Claim(ctx, "w", time.Minute, 0)
	assert.ErrorContains(t, err, "limit")
	_, err = p.ClaimKey(ctx, k, "w\x00", time.Minute)
	assert.ErrorContains(t, err, "owner")
	_, err = p.ClaimKey(ctx, k, "w", -time.Second)
	assert.ErrorContains(t, err, "lease")
	assert.ErrorContains(t, p.Unclaim(ctx, k, ""), "empty owner")
}

// TestPostgresWorkersResumeAfterOneIsKilled plays the fleet story at the
// store level: three workers share one keystore, one is killed holding
// claims, and the two others finish every intent, each sent exactly once.
func TestPostgresWorkersResumeAfterOneIsKilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	killed := openPostgresIn(t, schema, nil)
	keys := seedPending(t, killed, 60)

	// The killed worker took a batch with a short lease and died before
	// sending any of it.
	held, err := killed.Claim(ctx, "killed", 200*time.Millisecond, 15)
	require.NoError(t, err)
	require.Len(t, held, 15)
	require.NoError(t, killed.Close())

	var mu sync.Mutex
	sends := make(map[string]int)
	send := func(r *keystore.Record) {
		mu.Lock()
		defer mu.Unlock()
		sends[r.Key]++
	}

	// Bounds the run should claims never expire, rather than hanging.
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range 2 {
		s := openPostgresIn(t, schema, nil)
		owner := fmt.Sprintf("survivor-%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = resumeUntilDone(ctx, s, owner, send)
		}()
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])

	check := openPostgresIn(t, schema, nil)
	for _, k := range keys {
		assert.Equal(t, 1, sends[k], "intent %s sent once", k)
		r, err := check.Get(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, keystore.Succeeded, r.State)
	}
}

// resumeUntilDone is a resuming worker: it claims pending intents, sends
// each, stores the outcome and releases the claim, until no intent is left
// pending (claims of dead workers included).
func resumeUntilDone(ctx context.Context, s *Store, owner string, send func(*keystore.Record)) error {
	for {
		recs, err := s.Claim(ctx, owner, 30*time.Second, 5)
		if err != nil {
			return err
		}
		for _, r := range recs {
			send(r)
			r.State = keystore.Succeeded
			r.Attempts++
			if err := s.Update(ctx, r); err != nil {
				return err
			}
			if err := s.Unclaim(ctx, r.Key, owner); err != nil {
				return err
			}
		}
		if len(recs) > 0 {
			continue
		}
		left, err := s.List(ctx, keystore.Filter{States: []keystore.State{keystore.Pending}})
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		// Pending intents remain under someone's live claim: wait for
		// them to finish or expire.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
