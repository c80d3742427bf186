package pgkeystore

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// A run row changed behind the store's back is ErrCorrupt, named by
// ListRuns beside the sound ones; a keystore opened with NoCreate before
// the runs table existed reads as one without runs.
func TestPostgresRunDamageAndOlderKeystores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.PostgresDSN(t)
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, nil)
	require.NoError(t, p.PutRun(ctx, &keystore.Run{ID: "good", Version: 1, State: "running", Data: []byte(`{}`)}))
	require.NoError(t, p.PutRun(ctx, &keystore.Run{ID: "bad", Version: 1, State: "running", Data: []byte(`{}`)}))

	conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	runs := pgx.Identifier{schema, DefaultTable + runTableSuffix}.Sanitize()
	_, err = conn.Exec(ctx, `UPDATE `+runs+` SET doc = replace(convert_from(doc, 'UTF8'), 'running', 'complete')::bytea WHERE id = 'bad'`)
	require.NoError(t, err)
	_, err = p.GetRun(ctx, "bad")
	require.ErrorIs(t, err, keystore.ErrCorrupt)
	list, err := p.ListRuns(ctx)
	require.ErrorIs(t, err, keystore.ErrCorrupt)
	require.Len(t, list, 1)
	assert.Equal(t, "good", list[0].ID)

	// A keystore of an earlier build: no runs table.
	_, err = conn.Exec(ctx, `DROP TABLE `+runs)
	require.NoError(t, err)
	q, err := Open(ctx, dsn, &Options{Schema: schema, NoCreate: true})
	require.NoError(t, err)
	defer q.Close()
	_, err = q.GetRun(ctx, "good")
	require.ErrorIs(t, err, keystore.ErrNotFound)
	list, err = q.ListRuns(ctx)
	require.NoError(t, err)
	assert.Empty(t, list)
	require.Error(t, q.PutRun(ctx, &keystore.Run{ID: "x", Version: 1}), "NoCreate made no runs table to write to")

	// Opened without NoCreate, it gets one.
	r := openPostgresIn(t, schema, nil)
	require.NoError(t, r.PutRun(ctx, &keystore.Run{ID: "x", Version: 1, State: "running"}))
}
