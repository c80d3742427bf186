package keystore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// An adopted record is handed out by GetShared as it was handed over,
// until a write replaces it; Get, GetByName and List still copy it.
func TestMemoryGetSharedHandsOutTheAdoptedRecordUntilAWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := keystore.NewMemory()
	now := time.Now()
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
func TestMemoryPurgeTombstonesAnAdoptedRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := keystore.NewMemory()
	now := time.Now()
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
