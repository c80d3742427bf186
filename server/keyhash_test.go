package server_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

func TestKeyHash(t *testing.T) {
	t.Parallel()
	h := server.KeyHash("order-7f3a")
	assert.Regexp(t, `^[0-9a-f]{8}$`, h)
	assert.Equal(t, h, server.KeyHash("order-7f3a"), "one key, one hash")
	assert.NotEqual(t, h, server.KeyHash("order-7f3b"))
	assert.Equal(t, h, server.TelemetryKeyHash("order-7f3a")[:8], "a trace leads to the log lines")
}

// A reader of the logs cannot confirm a guessed key by hashing it: the
// hash is keyed, never the key's plain SHA-256.
func TestKeyHash_IsKeyed(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"", "order-42", "invoice-2024-0001"} {
		sum := sha256.Sum256([]byte(key))
		assert.NotEqual(t, hex.EncodeToString(sum[:4]), server.KeyHash(key), "key %q", key)
		assert.NotEqual(t, hex.EncodeToString(sum[:8]), server.TelemetryKeyHash(key), "key %q", key)
	}
}

// Not parallel: the secret is the process's.
func TestSetKeyHashSecret(t *testing.T) {
	err := server.SetKeyHashSecret([]byte("short"))
	require.Error(t, err)
	assert.True(t, errors.Is(err, server.ErrKeyHashSecretTooShort))

	require.NoError(t, server.SetKeyHashSecret([]byte("replica-secret-0123456789")))
	a := server.KeyHash("order-42")
	require.NoError(t, server.SetKeyHashSecret([]byte("another-secret-0123456789")))
	assert.NotEqual(t, a, server.KeyHash("order-42"), "another secret, another hash")
	require.NoError(t, server.SetKeyHashSecret([]byte("replica-secret-0123456789")))
	assert.Equal(t, a, server.KeyHash("order-42"), "replicas given one secret log one hash")
}
