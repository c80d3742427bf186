package storetest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// PayAsEachPrincipal runs the reference server on st and pays once with
// the same idempotency key as three callers: a bearer token, no
// credentials, and a token called "anonymous". Each must be a principal of
// its own (201, not a replay). The caller then reads its store's raw
// contents to check that token is stored only as its keyed hash.
func PayAsEachPrincipal(t *testing.T, st testserver.Store, token string) {
	t.Helper()
	srv, err := testserver.New(testserver.WithStore(st),
		testserver.WithPrincipalKey([]byte("storetest principal key for "+t.Name())))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); _ = srv.Close() })
	for _, auth := range []string{"Bearer " + token, "", "Bearer anonymous"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/v1/payments",
			strings.NewReader(`{"amount":1,"currency":"EUR"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(testserver.KeyHeader, "k-principal")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		assert.Empty(t, resp.Header.Get(testserver.ReplayedHeader), "%q is a principal of its own", auth)
	}
}
