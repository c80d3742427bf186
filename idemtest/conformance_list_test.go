package idemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A list that pages as Stripe's do, without a total, is counted across
// its pages: the checks count every effect, not the first page's.
func TestListCountFollowsPages(t *testing.T) {
	t.Parallel()
	const n = 234
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := 0
		if after := r.URL.Query().Get("starting_after"); after != "" {
			i, err := strconv.Atoi(after[len("pay_"):])
			require.NoError(t, err)
			start = i + 1
		}
		limit := 10
		if l := r.URL.Query().Get("limit"); l != "" {
			limit, _ = strconv.Atoi(l)
		}
		end := min(start+limit, n)
		data := []map[string]string{}
		for i := start; i < end; i++ {
			data = append(data, map[string]string{"id": fmt.Sprint("pay_", i)})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "has_more": end < n, "data": data})
	}))
	t.Cleanup(srv.Close)
	run := &conformanceRun{cfg: &conformanceConfig{listURL: srv.URL + "/v1/payments", client: srv.Client(), listCount: defaultListCount}}
	got, ok := run.count(t.Context(), nil)
	require.True(t, ok, "%v", run.listErr)
	assert.Equal(t, n, got)

	withTotal := []byte(`{"data":[{"id":"a"}],"has_more":true,"total":7}`)
	_, more := nextPageCursor(withTotal)
	assert.False(t, more, "a total is the whole count: no page is followed")
}
