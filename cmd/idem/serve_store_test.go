package main

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStoreKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]storeKind{
		"memory":                             storeMemory,
		"postgres://u@h:5432/db":             storePostgres,
		"POSTGRESQL://u@h/db?sslmode=verify": storePostgres,
		"redis://127.0.0.1:6379/0":           storeRedis,
		"rediss://u:p@h:6380":                storeRedis,
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
	root := newRootCommand(func(string) string { return "" })
	root.SetArgs(append([]string{"serve", "--addr", "127.0.0.1:0"}, args...))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return root.ExecuteContext(ctx)
}

// closedAddr returns a local address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestServe_UnreachableStoreFailsWithOneLine(t *testing.T) {
	t.Parallel()
	addr := closedAddr(t)
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
	dsn := os.Getenv("IDEM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("IDEM_TEST_POSTGRES is not set; set it to a PostgreSQL URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the Postgres store tests")
	}
	schema := "idemserve_" + strings.ToLower(rand.Text())
	t.Cleanup(func() { dropSchema(t, dsn, schema) })
	args := []string{"--store", dsn, "--store-schema", schema}
	assertStoreOutlivesServer(t, args)
}

func TestServe_RedisStoreOutlivesTheProcess(t *testing.T) {
	t.Parallel()
	url := os.Getenv("IDEM_TEST_REDIS")
	if url == "" {
		t.Skip("IDEM_TEST_REDIS is not set; set it to a Redis URL (e.g. redis://127.0.0.1:6379/0) to run the Redis store tests")
	}
	prefix := "idemserve:" + rand.Text() + ":"
	t.Cleanup(func() { dropPrefix(t, url, prefix) })
	args := []string{"--store", url, "--store-prefix", prefix}
	assertStoreOutlivesServer(t, args)
}

func assertStoreOutlivesServer(t *testing.T, args []string) {
	t.Helper()
	first, logs, stop := startServe(t, nil, args...)
	created, err := send(t, noKeepAlive(), http.MethodPost, first+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, created.status, created.body)
	require.NoError(t, stop())
	assert.NotContains(t, logs.text(), "s3cret")

	second, _, _ := startServe(t, nil, args...)
	replay, err := send(t, noKeepAlive(), http.MethodPost, second+"/v1/payments", "k1", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	assert.Equal(t, created.body, replay.body)
}

func dropSchema(t *testing.T, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}

func dropPrefix(t *testing.T, url, prefix string) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Errorf("drop prefix: %v", err)
		return
	}
	client := redis.NewClient(opts)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	iter := client.Scan(ctx, 0, prefix+"*", 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Errorf("drop prefix: %v", err)
		return
	}
	if len(keys) > 0 {
		if err := client.Del(ctx, keys...).Err(); err != nil {
			t.Errorf("drop prefix: %v", err)
		}
	}
}
