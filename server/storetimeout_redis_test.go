package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/redisstore"
)

// TestStoreTimeoutWithStalledRedis reaches a real Redis store through a
// proxy that stops forwarding. go-redis's own read and write timeouts are
// set to an hour, beyond the test's hang guard, so only the layer's
// deadline, passed down to go-redis, can end the wait: the 503 comes back
// while the proxy is still stalled, each Reserve was given the store
// timeout and ended by it, and the handler never runs.
func TestStoreTimeoutWithStalledRedis(t *testing.T) {
	t.Parallel()
	raw := testenv.RedisURL(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	q := u.Query()
	q.Set("read_timeout", "1h")
	q.Set("write_timeout", "1h")
	u.RawQuery = q.Encode()
	rs, err := redisstore.Open(t.Context(), u.String(),
		redisstore.WithPrefix(testenv.RedisPrefix(t, raw, "idemtest:")), redisstore.WithAllowVolatile())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rs.Close() })
	t.Cleanup(proxy.Resume) // first: a store call the test left stalled ends, so Close does not wait on it
	seen := newStoreCalls()

	handler := &countingHandler{}
	h := mustNew(t, watchedStore{rs, seen}, server.WithStoreTimeout(testStoreTimeout)).Wrap(paymentsRoute, handler)
	rec := serve(h, post("k-before", `{"amount":1000}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "the store works before the stall")

	seen.reset()
	proxy.Pause()
	started := time.Now()
	answers := make(chan *httptest.ResponseRecorder, 3)
	for i := range 3 {
		go func() {
			answers <- serve(h, post("k-stalled-"+string(rune('a'+i)), `{"amount":1000}`).withToken("tok"))
		}()
	}
	guard := time.After(hangGuard) // only stops a hang
	for range 3 {
		select {
		case rec := <-answers:
			requireStoreUnavailable(t, rec)
		case <-guard:
			t.Fatal("a stalled Redis held the request: the store timeout did not reach go-redis")
		}
	}
	requireEndedByBound(t, seen, "reserve", started, testStoreTimeout)
	require.Len(t, seen.of("reserve"), 3)
	require.Equal(t, 1, handler.runs(), "nothing ran while the store stalled")
	proxy.Resume()

	rec = serve(h, post("k-after", `{"amount":1000}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "the store works again once Redis answers")
	require.Equal(t, 2, handler.runs())
}
