package redisstore

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/internal/testserver"
)

// Every script of the payments API, a payment or an operation committed
// with its key, touches keys of one Redis Cluster slot: the key group of
// the caller's principal.
func TestPaymentScriptsTouchOneSlot(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	store := openStore(t, url, newPrefix(t, url))
	var scripts testenv.ScriptKeys
	store.Client().AddHook(&scripts)
	srv, err := testserver.New(testserver.WithStore(store), testserver.WithPayoutDelay(0))
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); _ = srv.Close() })
	for i := range 10 {
		for _, route := range []string{"/v1/payments", "/v1/payouts"} {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL+route,
				strings.NewReader(`{"amount":1,"currency":"EUR"}`))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(testserver.KeyHeader, "k")
			req.Header.Set("Authorization", fmt.Sprintf("Bearer tok_%d", i))
			resp, err := ts.Client().Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Less(t, resp.StatusCode, 300, route)
		}
	}
	n, err := store.CountPayments(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 10, n, "the counters of every group add up")

	wide := 0
	for _, keys := range scripts.Calls() {
		if len(keys) >= 5 { // a payment: its hash, its list, the counter, the record, the index
			wide++
		}
	}
	assert.Equal(t, 10, wide, "every payment's script was seen")
	assert.Empty(t, scripts.CrossSlotCalls(), "scripts whose keys span slots")
}
