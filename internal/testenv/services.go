package testenv

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Environment variables that name the services tests run against.
const (
	PostgresEnv = "IDEM_TEST_POSTGRES"
	RedisEnv    = "IDEM_TEST_REDIS"
)

// PostgresDSN returns the DSN of the test database, or skips the test when
// IDEM_TEST_POSTGRES is not set.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	return lookup(tb, PostgresEnv, "a PostgreSQL DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
}

// RedisURL returns the URL of the test Redis server, or skips the test when
// IDEM_TEST_REDIS is not set.
func RedisURL(tb testing.TB) string {
	tb.Helper()
	return lookup(tb, RedisEnv, "a Redis URL (e.g. redis://127.0.0.1:6379/0)")
}

func lookup(tb testing.TB, name, what string) string {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		tb.Skipf("%s is not set; set it to %s to run this test", name, what)
	}
	return v
}

// PostgresSchema returns a schema name, prefix followed by random
// lowercase letters and digits, that no other test uses, and drops that
// schema (if the test created it) when the test ends, so tests running in
// parallel, and other packages' tests on the same database, never see each
// other's rows.
func PostgresSchema(tb testing.TB, dsn, prefix string) string {
	tb.Helper()
	name := prefix + strings.ToLower(rand.Text())
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// RedisPrefix returns a key prefix, prefix followed by random letters and
// digits and a colon, that no other test uses, and deletes every key under
// it when the test ends, so tests running in parallel, and other packages'
// tests on the same server, never see each other's keys.
func RedisPrefix(tb testing.TB, url, prefix string) string {
	tb.Helper()
	name := prefix + rand.Text() + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := deleteKeys(ctx, url, name+"*"); err != nil {
			tb.Errorf("delete keys under %s: %v", name, err)
		}
	})
	return name
}

// deleteKeys deletes every key of the Redis server at url that matches
// pattern.
func deleteKeys(ctx context.Context, url, pattern string) error {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	client := redis.NewClient(opts)
	defer func() { _ = client.Close() }()
	iter := client.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		if err := client.Del(ctx, iter.Val()).Err(); err != nil {
			return err
		}
	}
	return iter.Err()
}
