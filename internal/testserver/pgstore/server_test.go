package pgstore

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/storetest"
)

// startServer runs the reference server over a store of the test's own.
func startServer(t *testing.T) *httptest.Server {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	srv, err := testserver.New(testserver.WithStore(openStore(t, dsn, newSchema(t, dsn))))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close()
	})
	return ts
}

// A value PostgreSQL cannot hold is bad input, answered 400: a 503 would
// tell the client to retry a request that can never succeed.
func TestTextPostgresCannotHoldIsABadRequest(t *testing.T) {
	t.Parallel()
	ts := startServer(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+"/v1/payments",
		strings.NewReader(`{"amount":1,"currency":"EUR","reference":"a\u0000b"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(testserver.KeyHeader, "k-nul")
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "body: %s", body)
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
}

// A bearer token is stored only as its keyed hash: no row of the records
// or the payments holds it, and the anonymous caller and a token called
// "anonymous" are two principals.
func TestBearerTokenIsNeverStored(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := newSchema(t, dsn)
	const token = "tok_never_stored_4f2a"
	storetest.PayAsEachPrincipal(t, openStore(t, dsn, schema), token)
	conn, err := pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var dump string
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT (SELECT string_agg(p::text, ' ') FROM `+schema+`.payments p) || ' ' ||
		(SELECT string_agg(r::text, ' ') FROM `+schema+`.idempotency_records r)`).Scan(&dump))
	assert.Contains(t, dump, "bearer:", "the principal is stored as its hash")
	assert.NotContains(t, dump, token)
}
