package keystore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testEpoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// pendingRecord returns a pending record created i seconds after the
// test epoch.
func pendingRecord(i int) *Record {
	at := testEpoch.Add(time.Duration(i) * time.Second)
	return &Record{
		Key:         fmt.Sprintf("key-%04d", i),
		Method:      "POST",
		URL:         "https://pay.example/v1/payments",
		Header:      map[string][]string{"Content-Type": {"application/json"}},
		Body:        []byte(fmt.Sprintf(`{"amount":%d}`, i)),
		Fingerprint: fmt.Sprintf("fp-%d", i),
		State:       Pending,
		CreatedAt:   at,
		UpdatedAt:   at,
	}
}

// cet is a zone other than UTC, to see stores write times in UTC.
var cet = time.FixedZone("CET", 3600)

// addedFieldsRecord is an Accepted record with a Host override whose
// outcome is in doubt: a reconciler was asked and did not know.
func addedFieldsRecord(i int) *Record {
	r := pendingRecord(i)
	r.Host = "payments.internal.example"
	r.State = Accepted
	r.Operation = "https://pay.example/v1/operations/op_1"
	r.AcceptedAt = time.Date(2025, 3, 1, 12, 0, 5, 250000000, cet)
	r.MayHaveExecuted = true
	r.Principal = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	r.SecretHeaders = []string{"Authorization", "X-Api-Key"}
	r.Purged = time.Date(2025, 3, 2, 12, 0, 0, 500000000, cet)
	r.Reconciliations = []Reconciliation{{
		Outcome: ReconciledUnknown, Source: "reconciler", By: "reconciler",
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
func assertAddedFields(t *testing.T, want, got *Record) {
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
func assertTrailInUTC(t *testing.T, got *Record) {
	t.Helper()
	for _, v := range got.Reconciliations {
		assert.Equal(t, time.UTC, v.At.Location(), "times are stored in UTC")
	}
}

// assertNoAddedFields checks that a record written without the added
// fields reads back with their zero values.
func assertNoAddedFields(t *testing.T, got *Record) {
	t.Helper()
	assert.Empty(t, got.Host)
	assert.True(t, got.AcceptedAt.IsZero(), "a record never accepted has no acceptance time")
	assert.False(t, got.MayHaveExecuted)
	assert.Nil(t, got.Reconciliations)
	assert.True(t, got.Purged.IsZero(), "a whole record was never purged")
}

func TestAddedFieldsSurviveBoltReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "intents.db")
	b, err := OpenBolt(path, nil)
	require.NoError(t, err)
	r := addedFieldsRecord(1)
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
	assertAddedFields(t, r, got)
	assert.Equal(t, time.UTC, got.AcceptedAt.Location(), "times are stored in UTC")
	assertTrailInUTC(t, got)

	got, err = b.Get(ctx, plain.Key)
	require.NoError(t, err)
	assertNoAddedFields(t, got)
}

func TestAddedFieldsInMemory(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	t.Cleanup(func() { _ = m.Close() })
	r := addedFieldsRecord(1)
	_, _, err := m.Create(context.Background(), r)
	require.NoError(t, err)
	got, err := m.Get(context.Background(), r.Key)
	require.NoError(t, err)
	assertAddedFields(t, r, got)

	// The trail is copied: changing the store's copy changes nothing.
	got.Reconciliations[0].Note = "scribbled"
	again, err := m.Get(context.Background(), r.Key)
	require.NoError(t, err)
	assert.Equal(t, "provider search timed out", again.Reconciliations[0].Note)
}
