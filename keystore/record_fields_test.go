package keystore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// acceptedVirtualHostRecord is an Accepted record with a Host override.
func acceptedVirtualHostRecord(i int) *Record {
	r := pendingRecord(i)
	r.Host = "payments.internal.example"
	r.State = Accepted
	r.Operation = "https://pay.example/v1/operations/op_1"
	r.AcceptedAt = time.Date(2025, 3, 1, 12, 0, 5, 250000000, time.FixedZone("CET", 3600))
	return r
}

// assertHostAndAcceptance checks the fields Host and AcceptedAt came back.
func assertHostAndAcceptance(t *testing.T, want, got *Record) {
	t.Helper()
	assert.Equal(t, want.Host, got.Host)
	assert.True(t, want.AcceptedAt.Equal(got.AcceptedAt), "accepted at %s, read back %s", want.AcceptedAt, got.AcceptedAt)
}

func TestHostAndAcceptanceSurviveBoltReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intents.db")
	b, err := OpenBolt(path, nil)
	require.NoError(t, err)
	r := acceptedVirtualHostRecord(1)
	_, created, err := b.Create(ctx, r)
	require.NoError(t, err)
	require.True(t, created)
	plain := pendingRecord(2)
	_, _, err = b.Create(ctx, plain)
	require.NoError(t, err)
	require.NoError(t, b.Close())

	b, err = OpenBolt(path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	got, err := b.Get(ctx, r.Key)
	require.NoError(t, err)
	assertHostAndAcceptance(t, r, got)
	assert.Equal(t, time.UTC, got.AcceptedAt.Location(), "times are stored in UTC")

	got, err = b.Get(ctx, plain.Key)
	require.NoError(t, err)
	assert.Empty(t, got.Host)
	assert.True(t, got.AcceptedAt.IsZero(), "a record never accepted has no acceptance time")
}

func TestHostAndAcceptanceInMemory(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	t.Cleanup(func() { _ = m.Close() })
	r := acceptedVirtualHostRecord(1)
	_, _, err := m.Create(context.Background(), r)
	require.NoError(t, err)
	got, err := m.Get(context.Background(), r.Key)
	require.NoError(t, err)
	assertHostAndAcceptance(t, r, got)
}

func TestPostgresHostAndAcceptanceRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	r := acceptedVirtualHostRecord(1)
	_, _, err := p.Create(ctx, r)
	require.NoError(t, err)
	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assertHostAndAcceptance(t, r, got)

	got.Host = ""
	got.AcceptedAt = time.Time{}
	require.NoError(t, p.Update(ctx, got))
	again, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.Empty(t, again.Host)
	assert.True(t, again.AcceptedAt.IsZero(), "a zero acceptance time is stored as NULL and read back zero")
}

func TestPostgresRejectsAHostItCannotStore(t *testing.T) {
	t.Parallel()
	p := openTestPostgres(t)
	r := pendingRecord(1)
	r.Host = "bad\x00host"
	_, _, err := p.Create(context.Background(), r)
	assert.ErrorContains(t, err, "host")
}

// A keystore table created before Host and AcceptedAt existed gets the
// columns when it is opened, and its records read back without them.
func TestPostgresAddsColumnsToAnOlderTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	first := openPostgresIn(t, schema, nil)
	old := pendingRecord(1)
	_, _, err := first.Create(ctx, old)
	require.NoError(t, err)
	require.NoError(t, first.Close())

	conn, err := pgx.Connect(ctx, testenv.DirectDSN(testenv.PostgresDSN(t)))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	table := pgx.Identifier{schema, DefaultPostgresTable}.Sanitize()
	_, err = conn.Exec(ctx, `ALTER TABLE `+table+` DROP COLUMN host, DROP COLUMN accepted_at`)
	require.NoError(t, err)

	second := openPostgresIn(t, schema, nil)
	got, err := second.Get(ctx, old.Key)
	require.NoError(t, err)
	assert.Empty(t, got.Host)
	assert.True(t, got.AcceptedAt.IsZero())

	r := acceptedVirtualHostRecord(2)
	_, _, err = second.Create(ctx, r)
	require.NoError(t, err)
	got, err = second.Get(ctx, r.Key)
	require.NoError(t, err)
	assertHostAndAcceptance(t, r, got)
}
