package idemtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// RunConformance refuses to grade the Shopify dialect: its key travels in
// a GraphQL directive the checks cannot place.
func TestRunConformance_RefusesTheShopifyDialect(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, WithDialect("shopify"))
	opts := srv.ConformanceOptions()
	opts.Dialect = "shopify"
	_, err := RunConformance(context.Background(), srv.URL, opts)
	require.ErrorIs(t, err, ErrDialectNotGradable)
	require.Zero(t, srv.Requests(), "refused before any request")
}
