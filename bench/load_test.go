package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// The runs last a second, not less: on a loaded machine a shorter run can
// end before its first request is answered, which would prove nothing.

func TestRunLoadAgainstTheReferenceServer(t *testing.T) {
	t.Parallel()
	ref, err := testserver.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ref.Close() })
	srv := httptest.NewServer(ref.Handler())
	t.Cleanup(srv.Close)

	res, err := RunLoad(context.Background(), NewLoadClient(4), srv.URL+"/v1/payments", LoadConfig{Conns: 4, Duration: time.Second})
	require.NoError(t, err)
	assert.Positive(t, res.OK)
	assert.Zero(t, res.Failed)
	// Requests cut short when the run ends reach the server uncounted, at
	// most one per connection.
	assert.GreaterOrEqual(t, ref.GuardedRequests(), res.OK)
	assert.LessOrEqual(t, ref.GuardedRequests(), res.OK+4)
}

func TestRunLoadReportsFailures(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	res, err := RunLoad(context.Background(), NewLoadClient(1), srv.URL, LoadConfig{Conns: 1, Duration: time.Second})
	require.ErrorIs(t, err, errUnexpectedStatus)
	assert.Zero(t, res.OK)
	assert.Positive(t, res.Failed)
}

func TestRunLoadRejectsBadConfig(t *testing.T) {
	t.Parallel()
	_, err := RunLoad(context.Background(), NewLoadClient(1), "http://127.0.0.1:1", LoadConfig{})
	require.Error(t, err)
}
