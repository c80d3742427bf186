package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// pgKeystoreTable is the table the tests' Postgres keystores use, not the
// default one, so that the commands find it only through --keystore-table.
const pgKeystoreTable = "orders_intents"

// populatePostgresKeystore has the real client write one succeeded intent
// into a Postgres keystore in a schema of the test's own, table
// pgKeystoreTable, and returns the DSN, the schema and the intent.
func populatePostgresKeystore(t *testing.T) (dsn, schema string, in *idem.Intent) {
	t.Helper()
	dsn = testenv.PostgresDSN(t)
	schema = testenv.PostgresSchema(t, dsn, "idemcli_")
	srv := idemtest.NewServer(t)
	client, err := idem.New(idem.WithKeystore(t.Context(), dsn,
		pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema, Table: pgKeystoreTable})))
	require.NoError(t, err)
	defer client.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments",
		strings.NewReader(`{"amount": 1200, "currency": "EUR", "reference": "order-7"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	in, err = client.Begin(t.Context(), "order-7/payment", req)
	require.NoError(t, err)
	resp, err := client.Do(t.Context(), in)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, idem.Succeeded, in.State)
	return dsn, schema, in
}

// pgExists reports whether a schema (kind "schema") or a table exists.
func pgExists(t *testing.T, dsn, kind, name string) bool {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	q := `SELECT to_regclass($1) IS NOT NULL`
	if kind == "schema" {
		q = `SELECT to_regnamespace($1) IS NOT NULL`
	}
	var ok bool
	require.NoError(t, conn.QueryRow(ctx, q, name).Scan(&ok))
	return ok
}

func TestIntentsPostgres_SchemaAndTableFlagsReachEveryCommand(t *testing.T) {
	t.Parallel()
	dsn, schema, in := populatePostgresKeystore(t)
	ks := []string{"--keystore", dsn, "--keystore-schema", schema, "--keystore-table", pgKeystoreTable}

	stdout, stderr, err := runIntentsCLI(t, nil, append([]string{"list"}, ks...)...)
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, in.Key)
	assert.Contains(t, stdout, "order-7/payment")

	stdout, stderr, err = runIntentsCLI(t, nil, append([]string{"show", in.Name}, ks...)...)
	require.NoError(t, err, stderr)
	assert.Regexp(t, `(?m)^State:\s+succeeded$`, stdout)

	_, stderr, err = runIntentsCLI(t, nil, append([]string{"purge", "--older-than", "24h", "--dry-run"}, ks...)...)
	require.NoError(t, err, stderr)
	_, stderr, err = runIntentsCLI(t, nil, append([]string{"resume", "--no-progress"}, ks...)...)
	require.NoError(t, err, stderr)
}

// Reading commands never create a keystore: a schema or table that is not
// there is one line naming both, and stays absent.
func TestIntentsPostgres_MissingKeystoreIsOneLineAndNotCreated(t *testing.T) {
	t.Parallel()
	dsn, schema, in := populatePostgresKeystore(t)
	// A schema name of the test's own, dropped at its end should a
	// command create it after all.
	absent := testenv.PostgresSchema(t, dsn, "idemcli_absent_")

	for _, tc := range []struct {
		name, schema, table, missing string
	}{
		{"no table", schema, "intents", schema + ".intents"},
		{"no schema", absent, pgKeystoreTable, absent},
	} {
		for _, cmd := range [][]string{{"list"}, {"show", in.Key}} {
			args := append(cmd, "--keystore", dsn, "--keystore-schema", tc.schema, "--keystore-table", tc.table)
			_, stderr, err := runIntentsCLI(t, nil, args...)
			requireOneLineError(t, stderr, err)
			assert.Contains(t, stderr, "no idem keystore at schema "+tc.schema+" table "+tc.table+" in postgres://", "%s: %s", tc.name, cmd[0])
			assert.Contains(t, stderr, "--keystore-schema and --keystore-table")
		}
	}
	assert.False(t, pgExists(t, dsn, "table", schema+".intents"), "list and show created no table")
	assert.False(t, pgExists(t, dsn, "schema", absent), "list and show created no schema")
}

func TestIntentsPostgres_BadNamesAreOneLine(t *testing.T) {
	t.Parallel()
	dsn := "postgres://idem:hunter2@127.0.0.1:1/idem?sslmode=disable&connect_timeout=2"
	_, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", dsn, "--keystore-schema", "Payments; DROP")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, `invalid schema name "Payments; DROP"`)
	assert.NotContains(t, stderr, "hunter2")

	// The names belong to a Postgres keystore only.
	path := filepath.Join(t.TempDir(), "idem.db")
	_, stderr, err = runIntentsCLI(t, nil, "list", "--keystore", path, "--keystore-table", "orders")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "--keystore-schema and --keystore-table name a Postgres keystore's table")
}
