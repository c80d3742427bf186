package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// testErrorsHideKeys checks that the errors of s name an idempotency key
// only by its reference, key# and the first 8 hex digits of its SHA-256,
// never by the key itself: callers log keystore errors, and a raw key must
// never reach a log.
func testErrorsHideKeys(t *testing.T, s keystore.Store) {
	ctx := context.Background()
	// Base32 in upper case: no stretch of it can pass for hex digits.
	stored, missing := "stored-"+rand.Text(), "missing-"+rand.Text()
	mustCreate(t, s, record(stored, "order-1", keystore.Pending, at(0)))

	_, _, err := s.Create(ctx, record(stored, "", keystore.Pending, at(1)))
	require.ErrorIs(t, err, keystore.ErrDuplicateKey)
	assertHidesKey(t, err, stored, "duplicate key")

	err = s.Update(ctx, record(stored, "order-2", keystore.Pending, at(1)))
	require.Error(t, err)
	assertHidesKey(t, err, stored, "rename")

	_, err = s.Get(ctx, missing)
	require.ErrorIs(t, err, keystore.ErrNotFound)
	assertHidesKey(t, err, missing, "get of a missing key")

	err = s.Update(ctx, record(missing, "", keystore.Failed, at(1)))
	require.ErrorIs(t, err, keystore.ErrNotFound)
	assertHidesKey(t, err, missing, "update of a missing key")
}

// assertHidesKey checks that err names key by its reference only.
func assertHidesKey(t *testing.T, err error, key, what string) {
	t.Helper()
	assert.NotContains(t, err.Error(), key, "%s: the error reveals the raw key", what)
	assert.Contains(t, err.Error(), keyRef(key), "%s: the error does not say which key", what)
}

// keyRef is how a keystore error names key: "key#" and the first 8 hex
// digits of its SHA-256.
func keyRef(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "key#" + hex.EncodeToString(sum[:4])
}
