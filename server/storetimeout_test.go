package server_test

import (
	"context"
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

// timedPost posts through h and says how long the answer took.
func timedPost(h http.Handler, key string) (*httptest.ResponseRecorder, time.Duration) {
	start := time.Now()
	rec := serve(h, post(key, `{"amount":1000}`).withToken("tok"))
	return rec, time.Since(start)
}

// requireStoreUnavailableWithin checks the answer is 503
// /store-unavailable with Retry-After, well within twice the bound.
func requireStoreUnavailableWithin(t *testing.T, rec *httptest.ResponseRecorder, took time.Duration) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, server.ProblemStoreUnavailable, problemType(t, rec))
	require.NotEmpty(t, rec.Header().Get("Retry-After"))
	require.GreaterOrEqual(t, took, testStoreTimeout/2)
	require.Less(t, took, 2*testStoreTimeout, "a stalled store must be given up on within the bound")
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
	store, err := pgstore.Open(t.Context(), u.String(), pgstore.WithSchema(testenv.PostgresSchema(t, dsn, "idemtest_")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	handler := &countingHandler{}
	mux := http.NewServeMux()
	idem := mustNew(t, store, server.WithStoreTimeout(testStoreTimeout))
	mux.Handle("POST "+paymentsRoute, idem.Wrap(paymentsRoute, handler))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

	rec := serve(mux, post("k-before", `{"amount":1000}`).withToken("tok"))
	require.Equal(t, http.StatusCreated, rec.Code, "the store works before the stall")

	proxy.Pause()
	// Several stalled POSTs at once: each is bounded on its own, and an
	// unguarded route keeps answering meanwhile.
	type answer struct {
		rec  *httptest.ResponseRecorder
		took time.Duration
	}
	answers := make(chan answer, 3)
	for i := range 3 {
		go func() {
			rec, took := timedPost(mux, fmt.Sprintf("k-stalled-%d", i))
			answers <- answer{rec, took}
		}()
	}
	health := serve(mux, call{method: http.MethodGet, route: "/healthz"})
	require.Equal(t, http.StatusNoContent, health.Code)
	require.Empty(t, answers, "other routes answer while the stalled requests still wait on the store")
	for range 3 {
		a := <-answers
		requireStoreUnavailableWithin(t, a.rec, a.took)
	}
	require.Equal(t, 1, handler.runs(), "nothing ran while the store stalled")
	proxy.Resume()
}

// stallingStore is a real memory store whose Reserve blocks until its
// context ends, as a store that never answers does.
type stallingStore struct{ *server.MemoryStore }

func (s stallingStore) Reserve(ctx context.Context, _ server.Scope, _, _ string, _ time.Duration) (*server.Reservation, *server.Record, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

func TestStoreTimeoutWithStalledReserve(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	handler := &countingHandler{}
	h := mustNew(t, stallingStore{mem}, server.WithStoreTimeout(testStoreTimeout)).Wrap(paymentsRoute, handler)
	rec, took := timedPost(h, "k-1")
	requireStoreUnavailableWithin(t, rec, took)
	require.Zero(t, handler.runs())
}

func TestStoreTimeoutDefault(t *testing.T) {
	require.Equal(t, 3*time.Second, server.DefaultStoreTimeout)
}

// stallingCompleteStore is a real memory store whose Complete blocks
// until its context ends.
type stallingCompleteStore struct{ *server.MemoryStore }

func (s stallingCompleteStore) Complete(ctx context.Context, _ server.Completion) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestStoreTimeoutBoundsSettling: the handler ran, the store never
// confirms storing its answer; the client still gets the answer within
// the bound instead of waiting out the lease.
func TestStoreTimeoutBoundsSettling(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	handler := &countingHandler{}
	h := mustNew(t, stallingCompleteStore{mem}, server.WithStoreTimeout(testStoreTimeout)).Wrap(paymentsRoute, handler)
	rec, took := timedPost(h, "k-1")
	require.Equal(t, http.StatusCreated, rec.Code)
	require.Equal(t, 1, handler.runs())
	require.Less(t, took, 2*testStoreTimeout)
}
