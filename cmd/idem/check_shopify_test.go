package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
)

// TestCheck_ShopifyDialectIsRefused: a GraphQL dialect whose key travels
// in a directive is not graded by checks that place keys in headers and
// JSON members: the run is refused with exit status 2 before any request.
func TestCheck_ShopifyDialectIsRefused(t *testing.T) {
	t.Parallel()
	srv, requests := nonIdempotentServer(t)
	stdout, stderr, err := runCheckCLI(t, srv.URL, "--dialect", "shopify")
	require.Error(t, err)
	assert.Equal(t, 2, exitCode(err))
	require.ErrorIs(t, err, idemtest.ErrDialectNotGradable)
	assert.Contains(t, err.Error(), "idem serve --dialect shopify")
	assert.Empty(t, stdout)
	assertOneLine(t, stderr)
	assert.Zero(t, requests.Load())
}
