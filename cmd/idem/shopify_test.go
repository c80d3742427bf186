package main

import (
	"fmt"
	"net/http"
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

// idem serve --dialect shopify serves Shopify's Admin GraphQL endpoint:
// the key in the @idempotent directive, a replay for the same variables,
// the userError IDEMPOTENCY_KEY_PARAMETER_MISMATCH for others.
func TestServe_ShopifyDialect(t *testing.T) {
	t.Parallel()
	url, logs, _ := startServe(t, nil, "--dialect", "shopify")
	client := noKeepAlive()
	body := func(delta int) string {
		return `{"query":"mutation { inventoryAdjustQuantities(input: {reason: \"restock\", name: \"available\", changes: [{delta: ` +
			fmt.Sprint(delta) + `, inventoryItemId: \"gid://shopify/InventoryItem/1\", locationId: \"gid://shopify/Location/1\"}]}) ` +
			`@idempotent(key: \"k1\") { inventoryAdjustmentGroup { id } userErrors { code } } }"}`
	}
	endpoint := url + "/admin/api/2026-04/graphql.json"
	first, err := sendBody(t, client, http.MethodPost, endpoint, body(5), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, first.status, first.body)
	assert.Contains(t, first.body, `"userErrors":[]`)
	replay, err := sendBody(t, client, http.MethodPost, endpoint, body(5), nil)
	require.NoError(t, err)
	assert.Equal(t, first.body, replay.body)
	reused, err := sendBody(t, client, http.MethodPost, endpoint, body(6), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, reused.status)
	assert.Contains(t, reused.body, "IDEMPOTENCY_KEY_PARAMETER_MISMATCH")
	assert.Contains(t, logs.text(), "dialect=shopify")
}
