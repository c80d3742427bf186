package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// testRuns holds a keystore.RunKeeper to its contract: versions are a
// compare-and-set (one of many concurrent writers of a version wins),
// reads are copies, a listing is oldest first. A store that keeps no
// runs skips it.
func testRuns(t *testing.T, s keystore.Store) {
	rk, ok := s.(keystore.RunKeeper)
	if !ok {
		t.Skipf("%T keeps no runs", s)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	_, err := rk.GetRun(ctx, "r1")
	require.ErrorIs(t, err, keystore.ErrNotFound)
	runs, err := rk.ListRuns(ctx)
	require.NoError(t, err)
	assert.Empty(t, runs)

	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2}), keystore.ErrRunVersion, "a first write is version 1")
	require.NoError(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 1, State: "running", Data: []byte(`{"a":1}`), CreatedAt: t0, UpdatedAt: t0}))
	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 1, State: "running", CreatedAt: t0}), keystore.ErrRunVersion, "version 1 of a run that exists")
	require.NoError(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2, State: "completed", Data: []byte(`{"a":2}`), CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}))
	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 2, State: "compensating", CreatedAt: t0}), keystore.ErrRunVersion, "a writer that read version 1 loses")
	require.ErrorIs(t, rk.PutRun(ctx, &keystore.Run{ID: "r1", Version: 4, CreatedAt: t0}), keystore.ErrRunVersion, "no version is skipped")
	require.Error(t, rk.PutRun(ctx, &keystore.Run{Version: 1}), "an empty id")
	require.Error(t, rk.PutRun(ctx, &keystore.Run{ID: "r9"}), "version 0")
	require.Error(t, rk.PutRun(ctx, nil))

	got, err := rk.GetRun(ctx, "r1")
	require.NoError(t, err)
	assert.Equal(t, uint64(2), got.Version)
	assert.Equal(t, "completed", got.State)
	assert.JSONEq(t, `{"a":2}`, string(got.Data))
	assert.True(t, got.CreatedAt.Equal(t0))
	assert.True(t, got.UpdatedAt.Equal(t0.Add(time.Second)))
	got.Data[0] = 'X' // a copy: the store keeps its own
	again, err := rk.GetRun(ctx, "r1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":2}`, string(again.Data))

	require.NoError(t, rk.PutRun(ctx, &keystore.Run{ID: "r0", Version: 1, State: "running", Data: []byte(`{}`), CreatedAt: t0.Add(-time.Minute), UpdatedAt: t0}))
	runs, err = rk.ListRuns(ctx)
	require.NoError(t, err)
	require.Len(t, runs, 2)
	assert.Equal(t, "r0", runs[0].ID, "oldest first")
	assert.Equal(t, "r1", runs[1].ID)

	// Writers racing for one version: exactly one wins.
	const writers = 8
	var wg sync.WaitGroup
	wins := make(chan int, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := rk.PutRun(ctx, &keystore.Run{ID: "r0", Version: 2, State: "running", Data: []byte(`{}`), CreatedAt: t0.Add(-time.Minute), UpdatedAt: t0})
			if err == nil {
				wins <- i
				return
			}
			assert.ErrorIs(t, err, keystore.ErrRunVersion)
		}()
	}
	wg.Wait()
	close(wins)
	assert.Len(t, wins, 1, "one writer of version 2 wins")
}
