package idemtest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// accountsServer is package server's layer over an http.ServeMux with a
// path value, as a service outside this module is written. blindPath
// hides the path value from the layer, as a layer that fingerprinted the
// route alone would.
func accountsServer(t *testing.T, blindPath bool) *httptest.Server {
	t.Helper()
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	m, err := server.New(store, server.WithPrincipal(server.BearerPrincipal([]byte("conformance-target-secret"))))
	require.NoError(t, err)
	var ids atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/accounts/{id}/payments", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body, _ := io.ReadAll(r.Body)
		if !validPayment(body) {
			server.WriteProblem(w, http.StatusBadRequest, server.ProblemInvalidRequest, "Invalid payment", "", 0)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":"pay_%d","account":%q}`, ids.Add(1), r.PathValue("id"))
	})
	guarded := m.Handler(mux)
	h := guarded
	if blindPath {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen := r.Clone(r.Context())
			seen.URL.Path, seen.URL.RawPath = "/v1/accounts/any/payments", ""
			guarded.ServeHTTP(w, seen)
		})
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func TestRequestTargetCheckVariesThePathValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		blindPath bool
		passed    bool
	}{
		{"path values fingerprinted", false, true},
		{"path values not fingerprinted", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := accountsServer(t, tc.blindPath)
			results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{
				Endpoint:      "/v1/accounts/acct_A/payments",
				OtherEndpoint: "/v1/accounts/acct_B/payments",
				ListEndpoint:  NoListEndpoint,
				Profile:       ProfileIdem,
				Concurrency:   4,
				Bursts:        2,
			})
			require.NoError(t, err)
			i := slices.IndexFunc(results, func(r CheckResult) bool { return r.ID == CheckRequestTarget })
			require.GreaterOrEqual(t, i, 0)
			got := results[i]
			assert.Equal(t, LevelIdem, got.Level)
			assert.Equal(t, tc.passed, got.Passed, got.Detail)
			if tc.passed {
				assert.Contains(t, got.Detail, "path value")
			} else {
				assert.Contains(t, got.Detail, "the other endpoint: got the first answer replayed")
			}
		})
	}
}

func TestRequestTargetCheckIsIdemProfileOnly(t *testing.T) {
	t.Parallel()
	srv := accountsServer(t, true)
	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{
		Endpoint: "/v1/accounts/acct_A/payments", OtherEndpoint: "/v1/accounts/acct_B/payments",
		ListEndpoint: NoListEndpoint, Concurrency: 4, Bursts: 2,
	})
	require.NoError(t, err)
	assert.NotContains(t, resultIDs(results), CheckRequestTarget, "draft-07 leaves the fingerprint to the server")
}

func TestOtherEndpointMustBeAPath(t *testing.T) {
	t.Parallel()
	_, err := RunConformance(t.Context(), "http://127.0.0.1:1", ConformanceOptions{OtherEndpoint: "v1/x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "other endpoint")
}
