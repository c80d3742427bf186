package redisstore

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/storetest"
)

// With the default prefix, a record and its expiry index share a Redis
// Cluster slot, and the key groups spread over KeyGroups slots.
func TestDefaultPrefixKeysShareASlotPerGroup(t *testing.T) {
	t.Parallel()
	k := keys{prefix: DefaultPrefix}
	slots := make(map[int]bool)
	for i := range 1000 {
		scope := server.Scope{Principal: fmt.Sprintf("bearer:%d", i), Method: "POST", Route: "/v1/payments"}
		rec := k.record(scope, "key")
		assert.Equal(t, testenv.RedisKeySlot(k.expiries(scope.Principal)), testenv.RedisKeySlot(rec), "record %s", rec)
		slots[testenv.RedisKeySlot(rec)] = true
	}
	assert.Len(t, slots, KeyGroups, "the groups spread the store over the cluster")
}

// Every script the store runs touches keys of one slot, as Redis Cluster
// requires, and the records an expiry index lists (which the sweep
// deletes) are in the index's slot too.
func TestEveryScriptTouchesOneSlot(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	s := openStore(t, url, newPrefix(t, url))
	var scripts testenv.ScriptKeys
	s.Client().AddHook(&scripts)
	ctx := t.Context()
	counterEffect := NewEffect(``, `redis.call('INCR', KEYS[1])`)
	for i := range 20 {
		scope := storetest.NewScope()
		res, _, err := s.Reserve(ctx, scope, "done", "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, server.Completion{Reservation: *res, Response: storetest.JSONResponse("{}"), Retention: time.Millisecond}))
		res, _, err = s.Reserve(ctx, scope, "released", "fp", time.Minute)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, *res))
		res, _, err = s.Reserve(ctx, scope, fmt.Sprintf("effect-%d", i), "fp", time.Minute)
		require.NoError(t, err)
		c := &server.Completion{Reservation: *res, Response: storetest.JSONResponse("{}"), Retention: time.Hour}
		require.NoError(t, s.CommitEffect(ctx, counterEffect, c, []string{s.KeyGroup(scope.Principal) + "orders"}))
	}
	for _, group := range s.AllKeyGroups() {
		members, err := s.Client().ZRange(ctx, group+"expiries", 0, -1).Result()
		require.NoError(t, err)
		for _, m := range members {
			assert.Equal(t, testenv.RedisKeySlot(group+"expiries"), testenv.RedisKeySlot(m), "index %s lists %s", group, m)
		}
	}
	time.Sleep(5 * time.Millisecond) // the completions' retention ends
	n, err := s.Sweep(ctx, 1000)
	require.NoError(t, err)
	assert.Equal(t, 20, n)

	calls := scripts.Calls()
	require.GreaterOrEqual(t, len(calls), 20*5+KeyGroups, "every call was seen")
	assert.Empty(t, scripts.CrossSlotCalls(), "scripts whose keys span slots")
	for _, keys := range calls {
		assert.True(t, strings.HasPrefix(keys[0], s.Prefix()), "%q", keys)
	}
}
