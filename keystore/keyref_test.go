package keystore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeyRef(t *testing.T) {
	t.Parallel()
	ref := keyRef("order-7f3a")
	assert.Regexp(t, `^key#[0-9a-f]{8}$`, ref)
	assert.NotContains(t, ref, "order-7f3a")
	assert.Equal(t, ref, keyRef("order-7f3a"), "one key, one reference")
	assert.NotEqual(t, ref, keyRef("order-7f3b"))
	// The SHA-256 of the empty string is e3b0c442 98fc1c14...
	assert.Equal(t, "key#e3b0c442", keyRef(""))
}
