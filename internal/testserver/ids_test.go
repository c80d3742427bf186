package testserver

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewIDShapeAndUniqueness(t *testing.T) {
	t.Parallel()
	shape := regexp.MustCompile(`^pay_[a-z2-7]{24}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := newID(paymentIDPrefix)
		require.Regexp(t, shape, id)
		assert.False(t, seen[id], "duplicate id %s", id)
		seen[id] = true
	}
	assert.Regexp(t, `^op_[a-z2-7]{24}$`, newID(operationIDPrefix))
}
