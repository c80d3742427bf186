package pgkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// tamper runs stmt on the row of key, as damage or a stray hand-edit would.
func tamper(t *testing.T, p *Store, schema, stmt, key string) {
	t.Helper()
	table := pgx.Identifier{schema, DefaultTable}.Sanitize()
	tag, err := p.pool.Exec(context.Background(), `UPDATE `+table+` SET `+stmt+` WHERE key = $1`, key)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

func TestPostgresChecksumCatchesChangedColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, &Options{PurgeBatch: 2})
	full := addedFieldsRecord(1)
	full.Name = "order-1"
	full.Response = &keystore.Response{Status: 201, Header: map[string][]string{"Location": {"/p/1"}}, Body: []byte(`{"id":"p1"}`)}
	for _, r := range []*keystore.Record{full, pendingRecord(2), pendingRecord(3), pendingRecord(4)} {
		_, _, err := p.Create(ctx, r)
		require.NoError(t, err)
		_, err = p.Get(ctx, r.Key)
		require.NoError(t, err, "a sound row verifies")
	}

	for _, stmt := range []string{
		`body = convert_to('{"amount":977}', 'UTF8')`,
		`url = 'https://pay.example:15443/v1/payments'`,
		`state = 'pending'`,
		`response_body = NULL`,
		`header = '{"Content-Type":["text/plain"]}'`,
		`reconciliations = NULL`,
		`checksum = '\x02'`,
	} {
		tamper(t, p, schema, stmt, full.Key)
		_, err := p.Get(ctx, full.Key)
		require.ErrorIs(t, err, keystore.ErrCorrupt, stmt)
		assert.ErrorContains(t, err, keystore.KeyRef(full.Key), stmt)
		_, err = p.GetByName(ctx, "order-1")
		assert.ErrorIs(t, err, keystore.ErrCorrupt, stmt)
		require.NoError(t, p.Update(ctx, full), "a whole rewrite repairs the row")
	}

	// A row written before checksums has none and is read as it is.
	tamper(t, p, schema, `checksum = NULL, attempts = 9`, pendingRecord(2).Key)
	legacy, err := p.Get(ctx, pendingRecord(2).Key)
	require.NoError(t, err)
	assert.Equal(t, 9, legacy.Attempts)

	tamper(t, p, schema, `fingerprint = 'fp-x'`, pendingRecord(3).Key)
	recs, err := p.List(ctx, keystore.Filter{})
	var damaged *keystore.CorruptRecordsError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, []string{pendingRecord(3).Key}, damaged.Keys)
	assert.Len(t, recs, 3, "List returns the sound rows with the error")

	claimed, err := p.Claim(ctx, "w", time.Minute, 10)
	require.ErrorAs(t, err, &damaged, "Claim names the damaged row too")
	assert.Equal(t, []string{pendingRecord(3).Key}, damaged.Keys)
	assert.Len(t, claimed, 3, "the accepted row 1 and the pending rows 2 and 4")
}

func TestPostgresPurgeLeavesDamagedRowsToTombstone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, &Options{PurgeBatch: 2})
	var keys []string
	for i := range 5 {
		r := pendingRecord(i)
		r.Name = "order-" + r.Key
		r.State = keystore.Succeeded
		_, _, err := p.Create(ctx, r)
		require.NoError(t, err)
		keys = append(keys, r.Key)
	}
	tamper(t, p, schema, `body = NULL`, keys[1])
	res, err := p.Purge(ctx, keystore.PurgeRequest{OlderThan: pgTestEpoch.Add(time.Hour)})
	var damaged *keystore.CorruptRecordsError
	require.ErrorAs(t, err, &damaged)
	assert.Equal(t, []string{keys[1]}, damaged.Keys)
	assert.Equal(t, keystore.PurgeResult{Tombstoned: 4}, res, "the batches go on past the damaged row")
	_, err = p.Get(ctx, keys[1])
	assert.ErrorIs(t, err, keystore.ErrCorrupt, "left as it was")
	tomb, err := p.Get(ctx, keys[4])
	require.NoError(t, err, "a tombstone gets its own checksum")
	assert.False(t, tomb.Purged.IsZero())
}
