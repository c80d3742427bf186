package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

func TestParseStoreKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]storeKind{
		"memory":                             storeMemory,
		"postgres://u@h:5432/db":             storePostgres,
		"POSTGRESQL://u@h/db?sslmode=verify": storePostgres,
		"redis://127.0.0.1:6379/0":           storeRedis,
		"rediss://u:p@h:6380":                storeRedis,
		"redis://h:7000?addr=h:7001":         storeRedis,
		"unix:///run/redis.sock":             storeRedis,
	} {
		got, err := parseStoreKind(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "Memory", "postgres", "redis:", "mysql://h/db", "bolt:///tmp/x", "/var/lib/idem.db"} {
		_, err := parseStoreKind(in)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), "want "+storeForms, in)
	}
}

func TestParseStoreKindHidesThePassword(t *testing.T) {
	t.Parallel()
	_, err := parseStoreKind("mysql://app:s3cret@db/pay")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret")
}

// runServeArgs runs `idem serve args...` to its end and returns its error.
func runServeArgs(t *testing.T, args ...string) error {
	t.Helper()
	root := newRootCommand(serveTestEnv(nil))
	root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return root.ExecuteContext(ctx)
}

func TestServe_UnreachableStoreFailsWithOneLine(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedAddr(t)
	for name, tc := range map[string]struct{ store, want string }{
		"postgres": {"postgres://app:s3cret@" + addr + "/db?sslmode=disable", "cannot open the postgres store at postgres://app:xxxxx@" + addr},
		"redis":    {"redis://:s3cret@" + addr + "/0", "cannot open the redis store at redis://:xxxxx@" + addr},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := runServeArgs(t, "--store", tc.store)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "s3cret", "the password never appears")
			assert.NotContains(t, err.Error(), "\n", "one line")
		})
	}
}

// TestServe_PostgresStoreOutlivesTheProcess serves a payment from one
// server, stops it, and replays the payment from a second server on the
// same database.
func TestServe_PostgresStoreOutlivesTheProcess(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemserve_")
	args := []string{"--store", dsn, "--store-schema", schema}
	assertStoreOutlivesServer(t, args)
}

func TestServe_RedisStoreOutlivesTheProcess(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	prefix := testenv.RedisPrefix(t, url, "idemserve:")
	// The test Redis persists nothing: only a restart of this process,
	// not of Redis, is what the test survives.
	args := []string{"--store", url, "--store-prefix", prefix, "--redis-allow-volatile"}
	assertStoreOutlivesServer(t, args)
}

// idem serve takes a Redis Cluster in go-redis's cluster URL form, checks
// every master (the test cluster persists, so no override is needed) and
// serves and replays payments whose keys live on any master.
func TestServe_RedisClusterStore(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3)
	args := []string{"--store", cluster.URL(), "--store-prefix", "idemserve:"}
	assertStoreOutlivesServer(t, args)
	// 24 tenants, whose key groups fall on every master (checked below).
	url, _, stop := startServe(t, nil, args...)
	for i := range 24 {
		token := fmt.Sprintf("tok_cluster_%d", i)
		auth := http.Header{"Authorization": {"Bearer " + token}}
		created, err := send(t, noKeepAlive(), http.MethodPost, url+"/v1/payments", "k-"+token, auth)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, created.status, created.body)
	}
	require.NoError(t, stop())
	for i := range cluster.Addrs() {
		n, err := cluster.Node(i).DBSize(t.Context()).Result()
		require.NoError(t, err)
		assert.Positive(t, n, "master %d holds keys", i)
	}
}

// A Redis that persists nothing would forget every key on its restart, and
// retries would run again: idem serve refuses it unless told the data is
// throwaway, and says how.
func TestServe_RedisThatPersistsNothingIsRefused(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	defer client.Close()
	aof, err := client.ConfigGet(t.Context(), "appendonly").Result()
	require.NoError(t, err)
	save, err := client.ConfigGet(t.Context(), "save").Result()
	require.NoError(t, err)
	if aof["appendonly"] == "yes" || save["save"] != "" {
		t.Skip("the test Redis persists; the refusal is covered by server/redisstore's tests")
	}
	prefix := testenv.RedisPrefix(t, url, "idemserve:")
	err = runServeArgs(t, "--store", url, "--store-prefix", prefix)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "persists nothing")
	assert.Contains(t, err.Error(), "--redis-allow-volatile")
}

// assertStoreOutlivesServer pays as a bearer caller through one server,
// stops it, and replays through a second on the same store: the two
// processes share the principal key (serveTestEnv), as replicas must.
func assertStoreOutlivesServer(t *testing.T, args []string) {
	t.Helper()
	auth := http.Header{"Authorization": {"Bearer tok_outlives"}}
	first, logs, stop := startServe(t, nil, args...)
	created, err := send(t, noKeepAlive(), http.MethodPost, first+"/v1/payments", "k1", auth)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	require.NoError(t, stop())
	assert.NotContains(t, logs.text(), "s3cret")

	second, _, _ := startServe(t, nil, args...)
	replay, err := send(t, noKeepAlive(), http.MethodPost, second+"/v1/payments", "k1", auth)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	assert.Equal(t, created.body, replay.body)
}
