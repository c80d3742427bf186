package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

// openCluster opens a store on cluster under a prefix of its own, by the
// cluster URL form. The cluster persists (AOF) and never evicts, so no
// override is needed.
func openCluster(tb testing.TB, cluster *testenv.RedisCluster, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(context.Background(), cluster.URL(), append([]Option{WithPrefix("idemtest:" + rand.Text() + ":")}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// scopesOnEveryMaster returns n scopes whose records fall on every master
// of cluster, at least one per master.
func scopesOnEveryMaster(t *testing.T, s *Store, cluster *testenv.RedisCluster, n int) []server.Scope {
	t.Helper()
	perMaster := map[int]int{}
	scopes := make([]server.Scope, n)
	for i := range scopes {
		scopes[i] = storetest.NewScope()
		perMaster[cluster.MasterOf(s.RecordKey(scopes[i], "k"))]++
	}
	require.Len(t, perMaster, len(cluster.Addrs()), "the tenants' keys span every master: %v", perMaster)
	return scopes
}

// The store's contract holds on a real three-master cluster.
func TestClusterContract(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3)
	storetest.Run(t, func(t *testing.T) server.Store { return openCluster(t, cluster) })
	storetest.RunReservationGrace(t, func(t *testing.T, grace time.Duration) server.Store {
		return openCluster(t, cluster, WithReservationGrace(grace))
	})
}

// Concurrent duplicates of keys of many tenants, spread over every
// master: each key is reserved once, its effect commits once with its
// completion, and every duplicate finds the one record.
func TestClusterDuplicatesAcrossTenants(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3)
	s := openCluster(t, cluster)
	ctx := t.Context()
	scopes := scopesOnEveryMaster(t, s, cluster, 48)
	incr := NewEffect(``, `redis.call('INCR', KEYS[1])`)
	const keysPerTenant, duplicates = 4, 6

	var wg sync.WaitGroup
	errs := make(chan error, len(scopes)*keysPerTenant*duplicates)
	for _, scope := range scopes {
		for k := range keysPerTenant {
			key := fmt.Sprintf("key-%d", k)
			counter := s.KeyGroup(scope.Principal) + "effects:" + Digest(scope.Principal, key)
			for range duplicates {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, rec, err := s.Reserve(ctx, scope, key, "fp", time.Minute)
					switch {
					case err != nil:
						errs <- err
					case res != nil:
						c := &server.Completion{Reservation: *res, Response: storetest.JSONResponse(`{}`), Retention: time.Hour}
						if err := s.CommitEffect(ctx, incr, c, []string{counter}); err != nil {
							errs <- err
						}
					case rec == nil:
						errs <- errors.New("neither a reservation nor a record")
					}
				}()
			}
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, scope := range scopes {
		for k := range keysPerTenant {
			key := fmt.Sprintf("key-%d", k)
			n, err := s.Client().Get(ctx, s.KeyGroup(scope.Principal)+"effects:"+Digest(scope.Principal, key)).Int()
			require.NoError(t, err)
			require.Equal(t, 1, n, "one effect for %s %s", scope.Principal, key)
			_, rec, err := s.Reserve(ctx, scope, key, "fp", time.Minute)
			require.NoError(t, err)
			require.NotNil(t, rec)
			require.Equal(t, server.StateCompleted, rec.State)
		}
	}
	for i := range cluster.Addrs() {
		n, err := cluster.Node(i).DBSize(ctx).Result()
		require.NoError(t, err)
		assert.Positive(t, n, "master %d holds records", i)
	}
}

// The sweeper deletes expired records on every master, and with one
// master down it still sweeps the others, reporting the failed groups.
func TestClusterSweepsEveryMaster(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3)
	s := openCluster(t, cluster)
	ctx := t.Context()
	scopes := scopesOnEveryMaster(t, s, cluster, 30)
	complete := func(scope server.Scope) {
		res := storetest.MustReserve(t, s, scope, "k", "fp", time.Minute)
		require.NoError(t, s.Complete(ctx, server.Completion{Reservation: res, Response: storetest.JSONResponse(`{}`), Retention: time.Millisecond}))
	}
	for _, scope := range scopes {
		complete(scope)
	}
	time.Sleep(5 * time.Millisecond) // every retention ends
	n, err := s.Sweep(ctx, 1000)
	require.NoError(t, err)
	assert.Equal(t, len(scopes), n, "every expired record left the store")
	for _, g := range s.AllKeyGroups() {
		left, err := s.Client().ZCard(ctx, g+"expiries").Result()
		require.NoError(t, err)
		assert.Zero(t, left, "group %s is swept", g)
	}

	for _, scope := range scopes {
		complete(scope)
	}
	time.Sleep(5 * time.Millisecond)
	cluster.Kill(2)
	onLiving := 0
	for _, scope := range scopes {
		if cluster.MasterOf(s.RecordKey(scope, "k")) != 2 {
			onLiving++
		}
	}
	n, err = s.Sweep(ctx, 1000)
	require.Error(t, err, "the groups of the killed master cannot be swept")
	assert.ErrorContains(t, err, "key groups failed")
	assert.Equal(t, onLiving, n, "the living masters are swept")
}

// Open reads a cluster through the address of any one node, and checks
// every master: one that persists nothing is refused, by its address.
func TestClusterOpenChecksEveryMaster(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3)
	ctx := t.Context()

	s, err := Open(ctx, "redis://"+cluster.Addrs()[1], WithPrefix("idemtest:"+rand.Text()+":"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.IsType(t, &redis.ClusterClient{}, s.Client(), "a cluster node's address opens the cluster")
	for _, scope := range scopesOnEveryMaster(t, s, cluster, 30) {
		storetest.MustReserve(t, s, scope, "k", "fp", time.Minute)
	}

	unsafe := cluster.Node(2)
	require.NoError(t, unsafe.ConfigSet(ctx, "appendonly", "no").Err())
	require.NoError(t, unsafe.ConfigSet(ctx, "save", "").Err())
	_, err = Open(ctx, cluster.URL())
	require.ErrorIs(t, err, ErrUnsafeServer)
	assert.ErrorContains(t, err, cluster.Addrs()[2], "the refusal names the master")
	for _, other := range cluster.Addrs()[:2] {
		assert.NotContains(t, err.Error(), other)
	}
	_, err = Open(ctx, "redis://"+cluster.Addrs()[0]+"/3")
	require.ErrorIs(t, err, ErrInvalidURL, "a cluster has database 0 only")
}

// New takes a client of the caller's and refuses one that would ignore
// the store timeout.
func TestNewTakesAUniversalClient(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3)
	ctx := t.Context()

	deaf := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs()})
	t.Cleanup(func() { _ = deaf.Close() })
	_, err := New(ctx, deaf)
	require.ErrorIs(t, err, ErrContextTimeoutDisabled)

	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	s, err := New(ctx, client, WithPrefix("idemtest:"+rand.Text()+":"))
	require.NoError(t, err)
	for _, scope := range scopesOnEveryMaster(t, s, cluster, 30) {
		storetest.MustReserve(t, s, scope, "k", "fp", time.Minute)
	}
	require.NoError(t, s.Close())
	require.NoError(t, client.Ping(ctx).Err(), "Close leaves the caller's client open")

	_, err = New(ctx, nil)
	require.Error(t, err)
}
