package testenv

import (
	"testing"

	"github.com/jackc/pgx/v5"
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
	assert.Equal(t, "postgres://example/db", PostgresDSN(t))
	assert.Equal(t, "redis://example/0", RedisURL(t))
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
			conn, err := pgx.Connect(t.Context(), dsn)
			require.NoError(t, err)
			defer func() { _ = conn.Close(ctx) }()
			_, err = conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
			require.NoError(t, err)
		})
	}
	require.Len(t, schemas, 2)
	assert.NotEqual(t, schemas[0], schemas[1])

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var left int
	require.NoError(t, conn.QueryRow(ctx,
		"SELECT count(*) FROM information_schema.schemata WHERE schema_name = ANY($1)", schemas).Scan(&left))
	assert.Zero(t, left)
}
