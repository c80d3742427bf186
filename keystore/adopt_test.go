package keystore_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/storetest"
)

// adoptingStore writes through Adopter, handing over private copies, so the
// whole contract (names, duplicates, renames, closed stores) also covers
// the adopting paths.
type adoptingStore struct{ adopterStore }

// adopterStore is a store that can adopt records.
type adopterStore interface {
	keystore.Store
	keystore.Adopter
	keystore.Sharer // every store that adopts also shares what it adopted
}

func (s adoptingStore) Create(ctx context.Context, r *keystore.Record) (*keystore.Record, bool, error) {
	own := r.Clone()
	existing, created, err := s.AdoptCreate(ctx, own)
	if created {
		if existing != own {
			return nil, false, assert.AnError
		}
		existing = own.Clone()
	}
	return existing, created, err
}

func (s adoptingStore) Update(ctx context.Context, r *keystore.Record) error {
	return s.AdoptUpdate(ctx, r.Clone())
}

// adopters opens each store that implements Adopter (and Sharer), empty.
var adopters = []struct {
	name string
	open func(t *testing.T) adopterStore
}{
	{"memory", func(*testing.T) adopterStore { return keystore.NewMemory() }},
	{"bolt", func(t *testing.T) adopterStore {
		s, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "keys.db"), nil)
		require.NoError(t, err)
		return s
	}},
}

// forEachAdopter runs test against a fresh store of each adopter, in
// parallel subtests named after them.
func forEachAdopter(t *testing.T, test func(t *testing.T, s adopterStore)) {
	for _, a := range adopters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			test(t, a.open(t))
		})
	}
}

func TestAdoptContract(t *testing.T) {
	t.Parallel()
	for _, a := range adopters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T) keystore.Store { return adoptingStore{a.open(t)} })
		})
	}
}

func adoptRecord(key, name string) *keystore.Record {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return &keystore.Record{
		Key: key, Name: name, Method: http.MethodPost, URL: "https://api.example.com/v1/payments",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"amount":1}`),
		Fingerprint: "fp", State: keystore.Pending, CreatedAt: now, UpdatedAt: now,
	}
}

func TestAdoptKeepsTheRecordAndHandsOutCopies(t *testing.T) {
	t.Parallel()
	for _, a := range adopters {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			testAdoptKeepsTheRecordAndHandsOutCopies(t, a.open)
		})
	}
}

func testAdoptKeepsTheRecordAndHandsOutCopies(t *testing.T, open func(t *testing.T) adopterStore) {
	ctx := context.Background()
	s := open(t)
	t.Cleanup(func() { _ = s.Close() })

	r := adoptRecord("k1", "order-1")
	existing, created, err := s.AdoptCreate(ctx, r)
	require.NoError(t, err)
	require.True(t, created)
	assert.Same(t, r, existing, "a created record is returned as given, not copied")

	got, err := s.Get(ctx, "k1")
	require.NoError(t, err)
	assert.NotSame(t, r, got)
	got.Header.Set("Content-Type", "scribbled")
	got.Body[0] = 'X'
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"), "Get hands out a copy")
	assert.Equal(t, byte('{'), r.Body[0])

	again, created, err := s.AdoptCreate(ctx, adoptRecord("k2", "order-1"))
	require.NoError(t, err)
	assert.False(t, created, "the name is taken")
	assert.NotSame(t, r, again, "an existing record comes back as a copy")
	assert.Equal(t, "k1", again.Key)

	u := r.Clone()
	u.State = keystore.Succeeded
	u.Response = &keystore.Response{Status: 201, Body: []byte(`{}`)}
	require.NoError(t, s.AdoptUpdate(ctx, u))
	got, err = s.Get(ctx, "k1")
	require.NoError(t, err)
	assert.Equal(t, keystore.Succeeded, got.State)
	assert.Equal(t, 201, got.Response.Status)

	renamed := u.Clone()
	renamed.Name = "order-2"
	assert.Error(t, s.AdoptUpdate(ctx, renamed), "a name is immutable")
	assert.ErrorIs(t, s.AdoptUpdate(ctx, adoptRecord("missing", "")), keystore.ErrNotFound)
	_, _, err = s.AdoptCreate(ctx, adoptRecord("k1", ""))
	assert.ErrorIs(t, err, keystore.ErrDuplicateKey)
	_, _, err = s.AdoptCreate(ctx, nil)
	assert.Error(t, err)
	assert.Error(t, s.AdoptUpdate(ctx, nil))
}
