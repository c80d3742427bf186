package pgkeystore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// With NoCreate, a schema or table that is not there is ErrNoKeystore,
// and nothing is created; an existing keystore opens as usual.
func TestOpenNoCreateCreatesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.PostgresDSN(t)
	schema := newPostgresTestSchema(t)
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	exists := func(kind, name string) bool {
		var ok bool
		q := `SELECT to_regclass($1) IS NOT NULL`
		if kind == "schema" {
			q = `SELECT to_regnamespace($1) IS NOT NULL`
		}
		require.NoError(t, conn.QueryRow(ctx, q, name).Scan(&ok))
		return ok
	}

	_, err = Open(ctx, dsn, &Options{Schema: schema, NoCreate: true})
	require.ErrorIs(t, err, ErrNoKeystore)
	assert.Contains(t, err.Error(), "no idem keystore at schema "+schema+" table intents: the schema does not exist")
	assert.False(t, exists("schema", schema), "no schema was created")

	_, err = conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	_, err = Open(ctx, dsn, &Options{Schema: schema, Table: "payments", NoCreate: true})
	require.ErrorIs(t, err, ErrNoKeystore)
	assert.Contains(t, err.Error(), "no idem keystore at schema "+schema+" table payments: the table does not exist")
	assert.False(t, exists("table", schema+".payments"), "no table was created")

	p := openPostgresIn(t, schema, &Options{Table: "payments"})
	_, _, err = p.Create(ctx, pendingRecord(1))
	require.NoError(t, err)
	q, err := Open(ctx, dsn, &Options{Schema: schema, Table: "payments", NoCreate: true})
	require.NoError(t, err)
	defer q.Close()
	got, err := q.Get(ctx, pendingRecord(1).Key)
	require.NoError(t, err)
	assert.Equal(t, pendingRecord(1).Key, got.Key)
}
