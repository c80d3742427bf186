package pgkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// cet is a zone other than UTC, to see stores write times in UTC.
var cet = time.FixedZone("CET", 3600)

// addedFieldsRecord is an Accepted record with a Host override whose
// outcome is in doubt: a reconciler was asked and did not know.
func addedFieldsRecord(i int) *keystore.Record {
	r := pendingRecord(i)
	r.Host = "payments.internal.example"
	r.State = keystore.Accepted
	r.Operation = "https://pay.example/v1/operations/op_1"
	r.AcceptedAt = time.Date(2025, 3, 1, 12, 0, 5, 250000000, cet)
	r.MayHaveExecuted = true
	r.Principal = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	r.SecretHeaders = []string{"Authorization", "X-Api-Key"}
	r.Purged = time.Date(2025, 3, 2, 12, 0, 0, 500000000, cet)
	r.Reconciliations = []keystore.Reconciliation{{
		Outcome: keystore.ReconciledUnknown, Source: "reconciler", By: "reconciler",
		// Nanoseconds: the trail is JSON in every store, which keeps them.
		At:   time.Date(2025, 3, 1, 12, 1, 0, 123456789, cet),
		Note: "provider search timed out",
	}}
	return r
}

// assertAddedFields checks that the fields added to Record after the
// first stores (Host, AcceptedAt, MayHaveExecuted, Reconciliations,
// Purged) came
// back, instants equal whatever their zone.
func assertAddedFields(t *testing.T, want, got *keystore.Record) {
	t.Helper()
	assert.Equal(t, want.Host, got.Host)
	assert.True(t, want.AcceptedAt.Equal(got.AcceptedAt), "accepted at %s, read back %s", want.AcceptedAt, got.AcceptedAt)
	assert.Equal(t, want.MayHaveExecuted, got.MayHaveExecuted)
	assert.Equal(t, want.Principal, got.Principal)
	assert.Equal(t, want.SecretHeaders, got.SecretHeaders)
	assert.True(t, want.Purged.Equal(got.Purged), "purged at %s, read back %s", want.Purged, got.Purged)
	require.Len(t, got.Reconciliations, len(want.Reconciliations))
	for i, w := range want.Reconciliations {
		g := got.Reconciliations[i]
		assert.True(t, w.At.Equal(g.At), "reconciled at %s, read back %s", w.At, g.At)
		w.At, g.At = time.Time{}, time.Time{}
		assert.Equal(t, w, g)
	}
}

// assertTrailInUTC checks that a persisting store wrote the audit trail's
// times in UTC, so they read back the same whatever the writer's zone.
func assertTrailInUTC(t *testing.T, got *keystore.Record) {
	t.Helper()
	for _, v := range got.Reconciliations {
		assert.Equal(t, time.UTC, v.At.Location(), "times are stored in UTC")
	}
}

// assertNoAddedFields checks that a record written without the added
// fields reads back with their zero values.
func assertNoAddedFields(t *testing.T, got *keystore.Record) {
	t.Helper()
	assert.Empty(t, got.Host)
	assert.True(t, got.AcceptedAt.IsZero(), "a record never accepted has no acceptance time")
	assert.False(t, got.MayHaveExecuted)
	assert.Nil(t, got.Reconciliations)
	assert.True(t, got.Purged.IsZero(), "a whole record was never purged")
}

func TestPostgresAddedFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	r := addedFieldsRecord(1)
	stored, _, err := p.Create(ctx, r)
	require.NoError(t, err)
	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assertAddedFields(t, r, got)
	assertTrailInUTC(t, got)
	assert.Equal(t, stored.Reconciliations, got.Reconciliations, "Create returns the trail as Get reads it")

	// A person settles it: the trail grows and the doubt stays recorded.
	got.State = keystore.Succeeded
	got.Reconciliations = append(got.Reconciliations, keystore.Reconciliation{
		Outcome: keystore.ReconciledSucceeded, Source: "manual", By: "alice@ops",
		At: time.Date(2025, 3, 1, 13, 0, 0, 0, cet), Note: "pay_123 in the provider dashboard",
	})
	require.NoError(t, p.Update(ctx, got))
	again, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assertAddedFields(t, got, again)

	again.Host = ""
	again.AcceptedAt = time.Time{}
	again.MayHaveExecuted = false
	again.Reconciliations = []keystore.Reconciliation{}
	again.Purged = time.Time{}
	require.NoError(t, p.Update(ctx, again))
	again, err = p.Get(ctx, r.Key)
	require.NoError(t, err)
	assertNoAddedFields(t, again) // a zero acceptance time and an empty trail are stored as NULL
}

// A note is a person's free text: what Postgres cannot hold is replaced,
// never a reason to lose the verdict.
func TestPostgresStoresANoteItMustClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	r := addedFieldsRecord(1)
	r.Reconciliations[0].Note = "dashboard says \x00\xff ok"
	r.Reconciliations[0].By = "bob\x00"
	stored, _, err := p.Create(ctx, r)
	require.NoError(t, err)
	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.Equal(t, "dashboard says \uFFFD\uFFFD ok", got.Reconciliations[0].Note)
	assert.Equal(t, "bob\uFFFD", got.Reconciliations[0].By)
	assert.Equal(t, stored.Reconciliations, got.Reconciliations, "Create returns the trail as Get reads it")

	r = addedFieldsRecord(2)
	r.Reconciliations[0].At = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, _, err = p.Create(ctx, r)
	assert.ErrorContains(t, err, "reconciliation time")
}

func TestPostgresRejectsAHostItCannotStore(t *testing.T) {
	t.Parallel()
	p := openTestPostgres(t)
	r := pendingRecord(1)
	r.Host = "bad\x00host"
	_, _, err := p.Create(context.Background(), r)
	assert.ErrorContains(t, err, "host")
}

// A keystore table created before the added fields existed gets their
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
	table := pgx.Identifier{schema, DefaultTable}.Sanitize()
	_, err = conn.Exec(ctx, `ALTER TABLE `+table+` DROP COLUMN host, DROP COLUMN accepted_at,
		DROP COLUMN may_have_executed, DROP COLUMN reconciliations`)
	require.NoError(t, err)

	second := openPostgresIn(t, schema, nil)
	got, err := second.Get(ctx, old.Key)
	require.NoError(t, err)
	assertNoAddedFields(t, got)

	r := addedFieldsRecord(2)
	_, _, err = second.Create(ctx, r)
	require.NoError(t, err)
	got, err = second.Get(ctx, r.Key)
	require.NoError(t, err)
	assertAddedFields(t, r, got)
}
