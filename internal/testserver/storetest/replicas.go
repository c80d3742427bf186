package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// RunReplicas runs the cases that need two replicas of the server: open
// returns two stores on the same data (two pools or clients on one
// database, as two server processes would hold), fresh for every subtest.
// The subtests run in parallel, so open must be safe to call concurrently.
func RunReplicas(t *testing.T, open func(t *testing.T) (a, b testserver.Store)) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, a, b testserver.Store)
	}{
		{"RacingForKeysGetOneWinnerEach", testReplicasRacingForKeys},
		{"StaleReplicaIsFencedAfterTakeover", testStaleReplicaIsFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t)
			require.NotNil(t, a, "open returned a nil store")
			require.NotNil(t, b, "open returned a nil store")
			tc.run(t, a, b)
		})
	}
}

// For every key, exactly one of all the replicas' concurrent requests may
// win, and only the winner's payment exists.
func testReplicasRacingForKeys(t *testing.T, a, b testserver.Store) {
	replicas := []testserver.Store{a, b}
	ctx := t.Context()
	scope := NewScope()

	const keys, perReplica = 20, 8
	var wins [keys]int
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range keys {
		key := fmt.Sprintf("key-%d", k)
		for _, replica := range replicas {
			for range perReplica {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					res, _, err := replica.Reserve(ctx, scope, key, "fp", time.Minute)
					if !assert.NoError(t, err) || res == nil {
						return
					}
					p := NewPayment(scope.Principal)
					c := &testserver.Completion{Reservation: *res, Response: JSONResponse(p.ID), Retention: time.Hour}
					if assert.NoError(t, replica.CreatePayment(ctx, p, c)) {
						mu.Lock()
						wins[k]++
						mu.Unlock()
					}
				}()
			}
		}
	}
	close(start)
	wg.Wait()

	for k, n := range wins {
		assert.Equal(t, 1, n, "key %d", k)
	}
	n, err := a.CountPayments(ctx)
	require.NoError(t, err)
	assert.Equal(t, keys, n, "one payment per key")
	list, err := b.ListPayments(ctx, scope.Principal)
	require.NoError(t, err)
	assert.Len(t, list, keys)
}

// A replica whose lease ran out is fenced once another replica took the
// key over: its payment and its completion are both refused.
func testStaleReplicaIsFenced(t *testing.T, slow, fast testserver.Store) {
	ctx := t.Context()
	scope, key := NewScope(), "k"

	stale, _, err := slow.Reserve(ctx, scope, key, "fp", 50*time.Millisecond)
	require.NoError(t, err)
	require.NotNil(t, stale)

	var fresh *testserver.Reservation
	require.Eventually(t, func() bool {
		fresh, _, err = fast.Reserve(ctx, scope, key, "fp", time.Minute)
		return err == nil && fresh != nil
	}, 10*time.Second, 10*time.Millisecond, "the expired lease must be taken over")

	late := NewPayment(scope.Principal)
	err = slow.CreatePayment(ctx, late, &testserver.Completion{Reservation: *stale, Response: JSONResponse("late"), Retention: time.Hour})
	require.ErrorIs(t, err, testserver.ErrFenced)
	_, err = fast.GetPayment(ctx, scope.Principal, late.ID)
	assert.ErrorIs(t, err, testserver.ErrNotFound, "the stale replica's payment must not exist")
	assert.ErrorIs(t, slow.Release(ctx, *stale), testserver.ErrFenced)

	p := NewPayment(scope.Principal)
	require.NoError(t, fast.CreatePayment(ctx, p, &testserver.Completion{Reservation: *fresh, Response: JSONResponse("fresh"), Retention: time.Hour}))
	_, rec, err := slow.Reserve(ctx, scope, key, "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, []byte("fresh"), rec.Response.Body)
}
