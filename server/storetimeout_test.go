package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

const testStoreTimeout = 300 * time.Millisecond

// startedPost posts through h and says when the test started it.
func startedPost(h http.Handler, key string) (*httptest.ResponseRecorder, time.Time) {
	start := time.Now()
	return serve(h, post(key, `{"amount":1000}`).withToken("tok")), start
}

// requireStoreUnavailable checks the answer is 503 /store-unavailable
// with Retry-After.
func requireStoreUnavailable(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, server.ProblemStoreUnavailable, problemType(t, rec))
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
}

// TestStoreTimeoutWithStalledPostgres reaches a real Postgres store
// through a proxy that stops forwarding: the connection stays open and
// silent, so only the layer's own deadline can end the wait.
func TestStoreTimeoutWithStalledPostgres(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	pg, err := pgstore.Open(t.Context(), u.String(), pgstore.WithSchema(testenv.PostgresSchema(t, dsn, "idemtest_")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = pg.Close() })
	t.Cleanup(proxy.Resume) // first: a store call the test left stalled ends, so Close does not wait on it
	seen := newStoreCalls()

	handler := &countingHandler{}
	mux := http.NewServeMux()
	idem := mustNew(t, watchedStore{pg, seen}, server.WithStoreTimeout(testStoreTimeout))
	mux.Handle("POST "+paymentsRoute, idem.Wrap(paymentsRoute, handler))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	rec := serve(mux, post("k-before", `{"amount":1000}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "the store works before the stall")

	seen.reset()
	proxy.Pause()
	// Several stalled POSTs at once: each is bounded on its own, and an
	// unguarded route answers once they all wait on the store.
	started := time.Now()
	answers := make(chan *httptest.ResponseRecorder, 3)
	for i := range 3 {
		go func() {
			answers <- serve(mux, post(fmt.Sprintf("k-stalled-%d", i), `{"amount":1000}`).withToken("tok"))
		}()
	}
	for range 3 {
		<-seen.began
	}
	health := serve(mux, call{method: http.MethodGet, route: "/healthz"})
	require.Equal(t, http.StatusNoContent, health.Code)
	guard := time.After(hangGuard) // only stops a hang
	for range 3 {
		select {
		case rec := <-answers:
			requireStoreUnavailable(t, rec)
		case <-guard:
			t.Fatal("a stalled Postgres held the request: the store timeout did not reach pgx")
		}
	}
	requireEndedByBound(t, seen, "reserve", started, testStoreTimeout)
	require.Len(t, seen.of("reserve"), 3)
	require.Equal(t, 1, handler.runs(), "nothing ran while the store stalled")
	proxy.Resume()
}

func TestStoreTimeoutWithStalledReserve(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	seen := newStoreCalls()
	handler := &countingHandler{}
	h := mustNew(t, stallingStore{mem, seen}, server.WithStoreTimeout(testStoreTimeout)).Wrap(paymentsRoute, handler)
	rec, started := startedPost(h, "k-1")
	requireStoreUnavailable(t, rec)
	requireEndedByBound(t, seen, "reserve", started, testStoreTimeout)
	require.Zero(t, handler.runs())
}

func TestStoreTimeoutDefault(t *testing.T) {
	require.Equal(t, 3*time.Second, server.DefaultStoreTimeout)
}

// TestStoreTimeoutBoundsSettling: the handler ran, the store never
// confirms storing its answer; the client still gets the answer, the
// wait on the store ended by the bound instead of the lease.
func TestStoreTimeoutBoundsSettling(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	seen := newStoreCalls()
	handler := &countingHandler{}
	h := mustNew(t, stallingCompleteStore{mem, seen}, server.WithStoreTimeout(testStoreTimeout)).Wrap(paymentsRoute, handler)
	rec, started := startedPost(h, "k-1")
	require.Equal(t, http.StatusCreated, rec.Code)
	require.Equal(t, 1, handler.runs())
	requireEndedByBound(t, seen, "complete", started, testStoreTimeout)
}
