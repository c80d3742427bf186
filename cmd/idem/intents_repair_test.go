package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// The damage message names a command; that command shows what is left,
// exports it, and replaces the record by a placeholder that keeps its key
// bound to its name, so a re-run never pays again under a new key.
func TestRepair_ExportsThenReplacesADamagedRecord(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	bad := p.pending[0]
	damageRecord(t, p.path, bad.Key)
	export := filepath.Join(t.TempDir(), "damaged.json")

	stdout, stderr, code := runCLI(t, "intents", "repair", bad.Key, "--keystore", p.path)
	assert.Equal(t, exitFailed, code, "without --yes the record stays damaged: %s", stderr)
	assert.Equal(t, "damaged record "+bad.Key+" ("+bad.Name+"): fails its checksum; ", stdout[:strings.Index(stdout, "; ")+2])
	assert.Contains(t, stderr, "left as it is")
	assert.NoFileExists(t, export)

	_, stderr, code = runCLI(t, "intents", "repair", bad.Key, "--keystore", p.path, "--yes")
	assert.Equal(t, exitCannotRun, code, "--yes without --export: %s", stderr)

	_, stderr, code = runCLI(t, "intents", "repair", p.succeeded[0].Key, "--keystore", p.path, "--export", export, "--yes")
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "is not damaged")
	assert.NoFileExists(t, export, "a sound record is never exported nor replaced")

	_, _, code = runCLI(t, "intents", "repair", "no-such-key", "--keystore", p.path, "--export", export, "--yes")
	assert.Equal(t, exitFailed, code)

	stdout, stderr, code = runCLI(t, "intents", "repair", keystore.KeyRef(bad.Key), "--keystore", p.path,
		"--export", export, "--yes", "--by", "alice")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "exported to "+export)
	assert.Contains(t, stdout, "idem intents settle "+bad.Key)

	var e damagedExport
	b, err := os.ReadFile(export)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &e))
	assert.Equal(t, bad.Key, e.Key)
	assert.Equal(t, bad.Name, e.Name)
	assert.Equal(t, "alice", e.By)
	assert.NotEmpty(t, e.StoredBase64)

	_, _, code = runCLI(t, "intents", "repair", bad.Key, "--keystore", p.path, "--export", export, "--yes")
	assert.Equal(t, exitCannotRun, code, "an export is never overwritten")

	stdout, stderr, code = runCLI(t, "intents", "list", "--keystore", p.path, "--json")
	require.Equal(t, exitOK, code, "nothing damaged is left: %s", stderr)
	var rows []intentSummary
	require.NoError(t, json.Unmarshal([]byte(stdout), &rows))
	var ph *intentSummary
	for i := range rows {
		if rows[i].Key == bad.Key {
			ph = &rows[i]
		}
	}
	require.NotNil(t, ph, "the placeholder is listed")
	assert.Equal(t, keystore.Expired, ph.State)
	assert.Equal(t, bad.Name, ph.Name)
	assert.True(t, ph.MayHaveExecuted)
	assert.Equal(t, keystore.ReconciledUnknown, ph.Reconciled)

	// A re-run of the name gets the same key, and is not resent.
	client, err := idem.New(idem.WithBoltStore(p.path, nil))
	require.NoError(t, err)
	defer client.Close()
	in, err := client.Resume(t.Context(), bad.Key)
	require.NoError(t, err)
	_, err = client.Do(t.Context(), in)
	assert.ErrorIs(t, err, idem.ErrKeyExpired, "an unknown outcome is never sent again")
	paid := p.srv.PaymentCount()
	req, err := http.NewRequest(http.MethodPost, p.srv.URL+"/v1/payments", strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	again, err := client.Begin(t.Context(), bad.Name, req)
	if err == nil {
		assert.Equal(t, bad.Key, again.Key, "the name stays bound to its key")
		_, err = client.Do(t.Context(), again)
	}
	assert.Error(t, err)
	assert.Equal(t, paid, p.srv.PaymentCount(), "nothing was paid again")
	require.NoError(t, client.Close())

	_, stderr, code = runCLI(t, "intents", "settle", bad.Key, "--keystore", p.path, "--succeeded", "--note", "in the dashboard", "--by", "alice")
	assert.Equal(t, exitOK, code, "the placeholder is settled like any expired intent: %s", stderr)
}

func TestRepair_PostgresKeystore(t *testing.T) {
	t.Parallel()
	dsn, schema, in := populatePostgresKeystore(t)
	ks := []string{"--keystore", dsn, "--keystore-schema", schema, "--keystore-table", pgKeystoreTable}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, `UPDATE `+pgx.Identifier{schema, pgKeystoreTable}.Sanitize()+` SET attempts = 9 WHERE key = $1`, in.Key)
	require.NoError(t, err)

	_, stderr, code := runCLI(t, append([]string{"intents", "list"}, ks...)...)
	assert.Equal(t, exitFailed, code)
	assert.Contains(t, stderr, "damaged record "+in.Key+" (order-7/payment)")
	_, stderr, code = runCLI(t, append([]string{"intents", "show", in.Key}, ks...)...)
	assert.Equal(t, exitFailed, code, stderr)

	export := filepath.Join(t.TempDir(), "row.json")
	stdout, stderr, code := runCLI(t, append([]string{"intents", "repair", in.Key, "--export", export, "--yes"}, ks...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "damaged record "+in.Key+" (order-7/payment)")
	b, err := os.ReadFile(export)
	require.NoError(t, err)
	assert.Contains(t, string(b), `\"attempts\":9`, "the row as stored")

	stdout, stderr, code = runCLI(t, append([]string{"intents", "show", in.Key}, ks...)...)
	require.Equal(t, exitOK, code, stderr)
	assert.Regexp(t, `(?m)^State:\s+expired$`, stdout)
	assert.Regexp(t, `(?m)^Name:\s+order-7/payment$`, stdout)
}
