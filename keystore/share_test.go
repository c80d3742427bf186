package keystore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// An adopted record is handed out by GetShared as it was handed over,
// until a write replaces it; Get, GetByName and List still copy it.
func TestGetSharedHandsOutTheAdoptedRecordUntilAWrite(t *testing.T) {
	t.Parallel()
	forEachAdopter(t, testGetSharedHandsOutTheAdoptedRecordUntilAWrite)
}

func testGetSharedHandsOutTheAdoptedRecordUntilAWrite(t *testing.T, m adopterStore) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second) // as a decoded copy reads it back
	r := &keystore.Record{
		Key: "k-shared", Name: "n-shared", Method: "POST", URL: "https://example.test/pay",
		Header: map[string][]string{"Content-Type": {"application/json"}},
		Body:   []byte(`{"amount":1}`), Fingerprint: "f", State: keystore.Pending,
		CreatedAt: now, UpdatedAt: now,
	}
	got, created, err := m.AdoptCreate(ctx, r)
	require.NoError(t, err)
	require.True(t, created)
	require.Same(t, r, got)

	shared, err := m.GetShared(ctx, r.Key)
	require.NoError(t, err)
	assert.Same(t, r, shared, "the adopted record itself")

	cp, err := m.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.NotSame(t, r, cp)
	assert.Equal(t, r, cp)
	cp.Body[0] = 'X'
	cp.Header["Content-Type"][0] = "text/plain"
	assert.Equal(t, `{"amount":1}`, string(r.Body), "a copy shares no bytes with the store")
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	byName, err := m.GetByName(ctx, r.Name)
	require.NoError(t, err)
	assert.NotSame(t, r, byName)
	listed, err := m.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.NotSame(t, r, listed[0])

	next := r.Clone()
	next.Body = []byte(`{"amount":2}`)
	next.UpdatedAt = now.Add(time.Second)
	require.NoError(t, m.Update(ctx, next))
	shared, err = m.GetShared(ctx, r.Key)
	require.NoError(t, err)
	assert.NotSame(t, r, shared, "a write replaces the adopted record")
	assert.NotSame(t, next, shared, "Update stores a copy")
	assert.Equal(t, `{"amount":2}`, string(shared.Body))
	assert.Equal(t, `{"amount":1}`, string(r.Body), "the adopted record is never modified")

	_, err = m.GetShared(ctx, "k-missing")
	require.ErrorIs(t, err, keystore.ErrNotFound)
	require.NoError(t, m.Close())
	_, err = m.GetShared(ctx, r.Key)
	require.ErrorIs(t, err, keystore.ErrClosed)
}

// Purge sees an adopted record as it sees an encoded one.
func TestPurgeTombstonesAnAdoptedRecord(t *testing.T) {
	t.Parallel()
	forEachAdopter(t, testPurgeTombstonesAnAdoptedRecord)
}

func testPurgeTombstonesAnAdoptedRecord(t *testing.T, m adopterStore) {
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second) // as a decoded copy reads it back
	r := &keystore.Record{
		Key: "k-purge", Name: "n-purge", Method: "POST", URL: "https://example.test/pay", Body: []byte("x"),
		Fingerprint: "f", State: keystore.Succeeded, CreatedAt: now, UpdatedAt: now.Add(-time.Hour),
		Response: &keystore.Response{Status: 201, Body: []byte("ok")},
	}
	_, _, err := m.AdoptCreate(ctx, r)
	require.NoError(t, err)
	res, err := m.Purge(ctx, keystore.PurgeRequest{OlderThan: now})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Tombstoned)
	got, err := m.GetShared(ctx, r.Key)
	require.NoError(t, err)
	assert.False(t, got.Purged.IsZero())
	assert.Empty(t, got.Body)
	assert.Equal(t, "x", string(r.Body), "the adopted record is never modified")
}

// A record made by Create (which copies) is never shared, and a deferred
// write replaces the adopted record as an Update does.
func TestBoltSharesOnlyAdoptedRecordsAndDropsThemOnADeferredWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "keys.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	now := time.Now().UTC().Truncate(time.Second) // as a decoded copy reads it back
	rec := func(key string) *keystore.Record {
		return &keystore.Record{Key: key, Method: "POST", URL: "https://example.test/pay", Body: []byte(`{"amount":1}`),
			Fingerprint: "f", State: keystore.Pending, CreatedAt: now, UpdatedAt: now}
	}
	copied := rec("k-copied")
	_, _, err = b.Create(ctx, copied)
	require.NoError(t, err)
	got, err := b.GetShared(ctx, copied.Key)
	require.NoError(t, err)
	assert.NotSame(t, copied, got, "Create keeps no reference to the caller's record")

	adopted := rec("k-adopted")
	_, _, err = b.AdoptCreate(ctx, adopted)
	require.NoError(t, err)
	got, err = b.GetShared(ctx, adopted.Key)
	require.NoError(t, err)
	assert.Same(t, adopted, got)
	settled := adopted.Clone()
	settled.State, settled.UpdatedAt = keystore.Succeeded, now.Add(time.Second)
	settled.Response = &keystore.Response{Status: 201, Body: []byte("ok")}
	require.NoError(t, b.UpdateDeferred(ctx, settled))
	got, err = b.GetShared(ctx, adopted.Key)
	require.NoError(t, err)
	assert.NotSame(t, adopted, got)
	assert.Equal(t, keystore.Succeeded, got.State, "the deferred write, not the adopted record")
	assert.Equal(t, keystore.Pending, adopted.State, "the adopted record is never modified")

	// A deferred write still checks against the record as created.
	again := rec("k-again")
	_, _, err = b.AdoptCreate(ctx, again)
	require.NoError(t, err)
	renamed := again.Clone()
	renamed.Name = "another"
	require.Error(t, b.UpdateDeferred(ctx, renamed), "a name belongs to its intent for life")
}

// The bolt keystore keeps a bounded number of adopted records: the oldest
// are read from the file again, and every one reads back whole.
func TestBoltAdoptedRecordsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "keys.db"), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	now := time.Now().UTC().Truncate(time.Second)
	var recs []*keystore.Record
	for i := range 1500 {
		r := &keystore.Record{Key: fmt.Sprintf("k-%04d", i), Method: "POST", URL: "https://example.test/pay",
			Body: []byte(`{"amount":1}`), Fingerprint: "f", State: keystore.Pending, CreatedAt: now, UpdatedAt: now}
		_, _, err := b.AdoptCreate(ctx, r)
		require.NoError(t, err)
		recs = append(recs, r)
	}
	shared := 0
	for _, r := range recs {
		got, err := b.GetShared(ctx, r.Key)
		require.NoError(t, err)
		assert.Equal(t, r.Key, got.Key)
		if got == r {
			shared++
		}
	}
	assert.Positive(t, shared)
	assert.LessOrEqual(t, shared, 1024, "at most adoptedMax kept")
	last, err := b.GetShared(ctx, recs[len(recs)-1].Key)
	require.NoError(t, err)
	assert.Same(t, recs[len(recs)-1], last, "the newest is kept")
}
