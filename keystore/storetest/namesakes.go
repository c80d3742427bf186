package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// Two principal fingerprints as the client makes them: 32 hex digits.
const (
	principalA = "0123456789abcdef0123456789abcdef"
	principalB = "fedcba9876543210fedcba9876543210"
)

// scoped is a record of the business name under principal ("" for one
// stored unscoped, as by a build before names were scoped).
func scoped(key, name, principal string) *keystore.Record {
	r := record(key, keystore.ScopedName(name, principal), keystore.Pending, at(0))
	r.Principal = principal
	return r
}

// testNamesakes: a business name is found under every principal and
// unscoped, and nothing else is: not a longer name, not another name
// that merely starts with it.
func testNamesakes(t *testing.T, s keystore.Store) {
	ns, ok := s.(keystore.NameScanner)
	if !ok {
		t.Skip("the store does not implement keystore.NameScanner")
	}
	ctx := context.Background()
	mustCreate(t, s, scoped("k-legacy", "order-1", ""))
	mustCreate(t, s, scoped("k-a", "order-1", principalA))
	mustCreate(t, s, scoped("k-b", "order-1", principalB))
	mustCreate(t, s, scoped("k-other", "order-10", principalA))
	mustCreate(t, s, scoped("k-longer", "order-1/refund", ""))
	// An anonymous name that looks scoped but whose record has no such
	// principal is its own business name.
	mustCreate(t, s, scoped("k-fake", "order-1@principal:"+principalB[:16]+principalA[:16], ""))

	got, err := ns.Namesakes(ctx, "order-1", 10)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"k-legacy", "k-a", "k-b"}, keys(got))
	for _, r := range got {
		assert.True(t, keystore.IsNamesake(r, "order-1"), r.Key)
	}

	got, err = ns.Namesakes(ctx, "order-10", 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"k-other"}, keys(got))

	got, err = ns.Namesakes(ctx, "order-1", 2)
	require.NoError(t, err)
	assert.Len(t, got, 2, "limit")

	got, err = ns.Namesakes(ctx, "order-2", 10)
	require.NoError(t, err)
	assert.Empty(t, got)
}

// testRebind: a record moves to another principal with its name index;
// the old name is free, the new one finds it; a taken name or a wrong
// old name is refused and nothing changes.
func testRebind(t *testing.T, s keystore.Store) {
	rb, ok := s.(keystore.Rebinder)
	if !ok {
		t.Skip("the store does not implement keystore.Rebinder")
	}
	ctx := context.Background()
	legacy := scoped("k-legacy", "order-1", "")
	mustCreate(t, s, legacy)
	mustCreate(t, s, scoped("k-b", "order-2", principalB))

	to := keystore.Binding{Name: keystore.ScopedName("order-1", principalA), Principal: principalA, SecretHeaders: []string{"Authorization"}}
	_, err := rb.Rebind(ctx, "k-legacy", "order-1-typo", to)
	require.ErrorIs(t, err, keystore.ErrNotFound)

	got, err := rb.Rebind(ctx, "k-legacy", "order-1", to)
	require.NoError(t, err)
	assert.Equal(t, to.Name, got.Name)
	assert.Equal(t, principalA, got.Principal)
	assert.Equal(t, []string{"Authorization"}, got.SecretHeaders)

	stored, err := s.GetByName(ctx, to.Name)
	require.NoError(t, err)
	want := legacy.Clone()
	want.Name, want.Principal, want.SecretHeaders = to.Name, principalA, []string{"Authorization"}
	assertSame(t, want, stored)
	_, err = s.GetByName(ctx, "order-1")
	require.ErrorIs(t, err, keystore.ErrNotFound, "the old name is free")

	// The name under its new principal is found; a Create of it returns it.
	if ns, ok := s.(keystore.NameScanner); ok {
		found, err := ns.Namesakes(ctx, "order-1", 10)
		require.NoError(t, err)
		assert.Equal(t, []string{"k-legacy"}, keys(found))
	}
	existing, created, err := s.Create(ctx, scoped("k-new", "order-1", principalA))
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, "k-legacy", existing.Key)

	// Onto a name another record holds: refused, nothing changed.
	taken := keystore.Binding{Name: keystore.ScopedName("order-2", principalB), Principal: principalB}
	_, err = rb.Rebind(ctx, "k-legacy", to.Name, taken)
	require.ErrorIs(t, err, keystore.ErrNameTaken)
	stored, err = s.Get(ctx, "k-legacy")
	require.NoError(t, err)
	assert.Equal(t, to.Name, stored.Name)

	// An update under the new name is accepted (the name is the record's now).
	stored.Attempts = 3
	require.NoError(t, s.Update(ctx, stored))
}
