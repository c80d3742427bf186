package idemtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idlessServer stores one answer per (principal, key) and answers every
// first request 201 {"status":"created"}: its bodies name no resource, so
// two principals' resources look alike.
func idlessServer() http.Handler {
	var mu sync.Mutex
	seen := map[[2]string]string{} // (principal, key) → body
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Idempotency-Key")
		mu.Lock()
		defer mu.Unlock()
		scope := [2]string{r.Header.Get("Authorization"), key}
		if first, ok := seen[scope]; ok && key != "" && first != string(body) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			return
		}
		if key != "" {
			seen[scope] = string(body)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"status":"created"}`)
	})
}

// TestRunConformance_IdlessAnswersDoNotFailScoping: two principals that
// get equal bodies without an id may hold two resources alike; without a
// list to count them, principal-scope is skipped, not failed.
func TestRunConformance_IdlessAnswersDoNotFailScoping(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(idlessServer())
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{ListEndpoint: NoListEndpoint, Profile: ProfileIdem})
	require.NoError(t, err)
	scope := results[slices.IndexFunc(results, func(r CheckResult) bool { return r.ID == CheckPrincipalScope })]
	assert.True(t, scope.Skipped, "%+v", scope)
	assert.Contains(t, scope.Detail, "names no resource id")
	assert.NotContains(t, failedIDs(results), CheckPrincipalScope)
}
