package testenv

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnsetServicesSkip(t *testing.T) {
	for name, get := range map[string]func(testing.TB) string{
		PostgresEnv: PostgresDSN,
		RedisEnv:    RedisURL,
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "")
			defer func() { assert.True(t, t.Skipped(), "an unset %s must skip the test", name) }()
			get(t)
			t.Errorf("%s is unset, yet the test went on", name)
		})
	}
}

func TestSetServicesAreReturned(t *testing.T) {
	t.Setenv(PostgresEnv, "postgres://example/db")
	t.Setenv(RedisEnv, "redis://example/0")
	assert.Equal(t, "postgres://example/db?pool_max_conns=4", PostgresDSN(t), "test pools are capped")
	assert.Equal(t, "redis://example/0", RedisURL(t))

	t.Setenv(PostgresEnv, "postgres://example/db?pool_max_conns=9&sslmode=disable")
	assert.Equal(t, "postgres://example/db?pool_max_conns=9&sslmode=disable", PostgresDSN(t), "a cap the variable sets wins")
	t.Setenv(PostgresEnv, "host=example dbname=db")
	assert.Equal(t, "host=example dbname=db pool_max_conns=4", PostgresDSN(t))
}

func TestDirectDSNDropsPoolSettings(t *testing.T) {
	assert.Equal(t, "postgres://example/db?sslmode=disable",
		DirectDSN("postgres://example/db?pool_max_conns=4&sslmode=disable"))
	assert.Equal(t, "host=example dbname=db", DirectDSN("host=example pool_max_conns=4 dbname=db"))
}

// A test's schema is its own, and is gone once the test ends.
func TestPostgresSchemaIsDroppedWhenTheTestEnds(t *testing.T) {
	dsn := PostgresDSN(t)
	ctx := t.Context()
	var schemas []string
	for range 2 {
		t.Run("create", func(t *testing.T) {
			schema := PostgresSchema(t, dsn, "idem_testenv_")
			schemas = append(schemas, schema)
			conn, err := pgx.Connect(t.Context(), DirectDSN(dsn))
			require.NoError(t, err)
			defer func() { _ = conn.Close(ctx) }()
			_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
			require.NoError(t, err)
		})
	}
	require.Len(t, schemas, 2)
	assert.NotEqual(t, schemas[0], schemas[1])

	conn, err := pgx.Connect(ctx, DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var left int
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT count(*) FROM information_schema.schemata WHERE schema_name = ANY($1)", schemas).Scan(&left))
	assert.Zero(t, left)
}

// A test's key prefix is its own, and its keys are gone once the test ends.
func TestRedisPrefixIsDeletedWhenTheTestEnds(t *testing.T) {
	url := RedisURL(t)
	ctx := t.Context()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	defer func() { _ = client.Close() }()

	var prefixes []string
	for range 2 {
		t.Run("write", func(t *testing.T) {
			prefix := RedisPrefix(t, url, "idem_testenv:")
			prefixes = append(prefixes, prefix)
			for _, k := range []string{"a", "b"} {
				require.NoError(t, client.Set(ctx, prefix+k, "v", time.Hour).Err())
			}
		})
	}
	require.Len(t, prefixes, 2)
	assert.NotEqual(t, prefixes[0], prefixes[1])
	for _, prefix := range prefixes {
		assert.True(t, strings.HasPrefix(prefix, "idem_testenv:"))
		keys, err := client.Keys(ctx, prefix+"*").Result()
		require.NoError(t, err)
		assert.Empty(t, keys, "keys under %s must be deleted", prefix)
	}
}
