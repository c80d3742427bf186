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
// proxy that stops forwarding. go-redis's own read timeout is set far
// beyond the store timeout (30 s), so only the layer's deadline, passed
// down to go-redis, can end the wait: the 503 comes back while the proxy
// is still stalled, long before go-redis would give up by itself, and the
// handler never runs.
func TestStoreTimeoutWithStalledRedis(t *testing.T) {
	t.Parallel()
	raw := testenv.RedisURL(t)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	q := u.Query()
	q.Set("read_timeout", "30s")
	q.Set("write_timeout", "30s")
	u.RawQuery = q.Encode()
	store, err := redisstore.Open(t.Context(), u.String(),
		redisstore.WithPrefix(testenv.RedisPrefix(t, raw, "idemtest:")), redisstore.WithAllowVolatile())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	handler := &countingHandler{}
	h := mustNew(t, store, server.WithStoreTimeout(testStoreTimeout)).Wrap(paymentsRoute, handler)
	rec := serve(h, post("k-before", `{"amount":1000}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "the store works before the stall")

	proxy.Pause()
	type answer struct {
		rec  *httptest.ResponseRecorder
		took time.Duration
	}
	answers := make(chan answer, 3)
	for i := range 3 {
		go func() {
			rec, took := timedPost(h, "k-stalled-"+string(rune('a'+i)))
			answers <- answer{rec, took}
		}()
	}
	// Generous: ten times the store timeout, a third of go-redis's own
	// read timeout.
	giveUp := time.After(10 * time.Second)
	for range 3 {
		select {
		case a := <-answers:
			require.Equal(t, http.StatusServiceUnavailable, a.rec.Code, "took %v", a.took)
			require.Equal(t, server.ProblemStoreUnavailable, problemType(t, a.rec))
			require.NotEmpty(t, a.rec.Header().Get("Retry-After"))
		case <-giveUp:
			t.Fatal("a stalled Redis held the request: the store timeout did not reach go-redis")
		}
	}
	require.Equal(t, 1, handler.runs(), "nothing ran while the store stalled")
	proxy.Resume()

	rec = serve(h, post("k-after", `{"amount":1000}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "the store works again once Redis answers")
	require.Equal(t, 2, handler.runs())
}
