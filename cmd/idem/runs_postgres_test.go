package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore/pgkeystore"
	"github.com/idemkit/idem/saga"
)

// The runs commands on a fleet's Postgres keystore: the runs table
// beside the intents, found through --keystore-schema and
// --keystore-table; resume settles the lost charge with one payment.
func TestRunsCommands_Postgres(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemruns_")
	srv := idemtest.NewServer(t)
	sagaRuns(t, srv, sagaClient(t, idem.WithKeystore(t.Context(), dsn,
		pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema, Table: pgKeystoreTable}))))
	where := []string{"--keystore", dsn, "--keystore-schema", schema, "--keystore-table", pgKeystoreTable}

	stdout, stderr, code := runRunsCLI(t, nil, append([]string{"list", "--json"}, where...)...)
	require.Equal(t, exitOK, code, stderr)
	var rows []runSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	require.Len(t, rows, 3)
	assert.Equal(t, saga.Running, rows[1].State)
	assert.Equal(t, 1, rows[1].Unsettled)

	stdout, stderr, code = runRunsCLI(t, nil, append([]string{"resume", "order-2", "--token", testToken, "--no-progress"}, where...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "run order-2 is running")
	assert.Equal(t, 1, paymentsOf(srv, "charge-order-2"))

	stdout, stderr, code = runRunsCLI(t, nil, append([]string{"resolve", "tenant-a@order-3", "charge", "--succeeded", "--by", "ops", "--note", "refunded by hand"}, where...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "run tenant-a@order-3 is compensating")

	_, stderr, code = runRunsCLI(t, nil, append([]string{"show", "order-9"}, where...)...)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, `no run "order-9"`)
}
