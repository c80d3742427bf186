package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/server"
)

func TestKeyHash(t *testing.T) {
	t.Parallel()
	h := server.KeyHash("order-7f3a")
	assert.Regexp(t, `^[0-9a-f]{8}$`, h)
	assert.Equal(t, h, server.KeyHash("order-7f3a"), "one key, one hash")
	assert.NotEqual(t, h, server.KeyHash("order-7f3b"))
	// The SHA-256 of the empty string is e3b0c442 98fc1c14...
	assert.Equal(t, "e3b0c442", server.KeyHash(""))
}
