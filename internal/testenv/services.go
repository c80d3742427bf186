package testenv

import (
	"context"
	"crypto/rand"
	"net/url"
	"os"
	"strconv"
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

// testPoolMaxConns caps every connection pool a test opens. The stores
// default to 16 connections per pool, and packages run their tests in
// parallel against one server, so uncapped pools would exhaust a default
// max_connections of 100.
const testPoolMaxConns = 4

// PostgresDSN returns the DSN of the test database, or skips the test when
// IDEM_TEST_POSTGRES is not set. Unless the variable sets pool_max_conns
// itself, the DSN caps pools at a few connections (pgxpool reads
// pool_max_conns); open single connections with DirectDSN of it.
func PostgresDSN(tb testing.TB) string {
	tb.Helper()
	dsn := lookup(tb, PostgresEnv, "a PostgreSQL DSN (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	if strings.Contains(dsn, "pool_max_conns") {
		return dsn
	}
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(testPoolMaxConns))
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " pool_max_conns=" + strconv.Itoa(testPoolMaxConns) // key=value form
}

// DirectDSN returns dsn without the pool_* settings that only pgxpool
// understands, for pgx.Connect (which would send them to the server as
// unknown run-time parameters).
func DirectDSN(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" {
		q := u.Query()
		for name := range q {
			if strings.HasPrefix(name, "pool_") {
				q.Del(name)
			}
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	fields := strings.Fields(dsn)
	kept := fields[:0]
	for _, f := range fields {
		if !strings.HasPrefix(f, "pool_") {
			kept = append(kept, f)
		}
	}
	return strings.Join(kept, " ")
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
		conn, err := pgx.Connect(ctx, DirectDSN(dsn))
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
