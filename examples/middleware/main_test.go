package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
)

// conformance runs every check of the conformance checker against the
// API and requires each to pass.
func conformance(t *testing.T, api *ordersAPI) {
	t.Helper()
	ts := httptest.NewServer(api.Handler())
	t.Cleanup(ts.Close)
	results, err := idemtest.RunConformance(t.Context(), ts.URL, idemtest.ConformanceOptions{
		Endpoint:     "/v1/orders",
		ListEndpoint: "/v1/orders",
		Profile:      idemtest.ProfileIdem,
		HTTPClient:   ts.Client(),
		Body: func(i int) []byte {
			return fmt.Appendf(nil, `{"sku":"book","quantity":1,"note":"conformance %d"}`, i)
		},
		InvalidBody: func(i int) []byte {
			return fmt.Appendf(nil, `{"sku":"book","quantity":0,"note":"invalid %d"}`, i)
		},
		Hold: func(context.Context) (func(), error) {
			api.delay.Store(int64(150 * time.Millisecond))
			return func() { api.delay.Store(0) }, nil
		},
	})
	require.NoError(t, err)
	require.NotEmpty(t, results)
	for _, r := range results {
		assert.True(t, r.Passed, "%s (%s): %s", r.ID, r.Level, r.Detail)
	}
}

func TestConformanceOnMemory(t *testing.T) {
	api, closeStore, err := newAPI(t.Context(), "", "")
	require.NoError(t, err)
	t.Cleanup(closeStore)
	conformance(t, api)
}

func TestConformanceOnPostgres(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemtest_")
	api, closeStore, err := newAPI(t.Context(), dsn, schema)
	require.NoError(t, err)
	t.Cleanup(closeStore)
	conformance(t, api)
}
