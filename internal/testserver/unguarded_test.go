package testserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnguardedPaymentsHandlerRunsEveryRequest(t *testing.T) {
	t.Parallel()
	store := NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	h := UnguardedPaymentsHandler(store)
	for range 2 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, routePayments, strings.NewReader(`{"amount":1000,"currency":"EUR"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(KeyHeader, "same-key")
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		assert.Empty(t, rec.Header().Get(ReplayedHeader), "no idempotency layer: nothing is replayed")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, routePayments, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}
