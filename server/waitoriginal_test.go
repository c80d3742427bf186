package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// watchCountingStore is a memory store that counts the requests that
// began waiting on a key, so a test knows the duplicates wait.
type watchCountingStore struct {
	*server.MemoryStore
	watches atomic.Int32
}

func (s *watchCountingStore) WatchKey(scope server.Scope, key string) (<-chan struct{}, func()) {
	s.watches.Add(1)
	return s.MemoryStore.WatchKey(scope, key)
}

// reserveCountingStore hides the memory store's KeyWatcher, so the layer
// polls it, and counts Reserve calls.
type reserveCountingStore struct {
	server.Store
	reserves atomic.Int32
}

func (s *reserveCountingStore) Reserve(ctx context.Context, scope server.Scope, key, fp string, lease time.Duration) (*server.Reservation, *server.Record, error) {
	s.reserves.Add(1)
	return s.Store.Reserve(ctx, scope, key, fp, lease)
}

// runDuplicates sends n duplicates of post(key) at once and returns
// their answers once all are in.
func runDuplicates(h http.Handler, key string, n int) <-chan []*httptest.ResponseRecorder {
	out := make(chan []*httptest.ResponseRecorder, 1)
	go func() {
		answers := make([]*httptest.ResponseRecorder, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = serve(h, post(key, paymentBody))
			}()
		}
		wg.Wait()
		out <- answers
	}()
	return out
}

// assertReplaysOfFirstRun checks every duplicate got the original's
// answer, replayed.
func assertReplaysOfFirstRun(t *testing.T, answers []*httptest.ResponseRecorder) {
	t.Helper()
	for _, a := range answers {
		require.Equal(t, http.StatusCreated, a.Code, "body %s", a.Body)
		assert.True(t, replayed(a))
		assert.JSONEq(t, `{"run":1}`, a.Body.String())
	}
}

// Duplicates that arrive while the original runs wait for it and get its
// answer, woken by the memory store; the handler runs once.
func TestWaitForOriginal_DuplicatesGetTheReplay(t *testing.T) {
	t.Parallel()
	store := &watchCountingStore{MemoryStore: server.NewMemoryStore()}
	t.Cleanup(func() { _ = store.Close() })
	h := newBlockingHandler()
	wrapped := mustNew(t, store, server.WithWaitForOriginal(time.Minute)).Wrap(paymentsRoute, h)

	original := make(chan *httptest.ResponseRecorder, 1)
	go func() { original <- serve(wrapped, post("wait-1", paymentBody)) }()
	<-h.entered
	const n = 8
	dups := runDuplicates(wrapped, "wait-1", n)
	require.Eventually(t, func() bool { return store.watches.Load() >= n }, 10*time.Second, time.Millisecond,
		"every duplicate waits")
	close(h.release)

	first := <-original
	require.Equal(t, http.StatusCreated, first.Code)
	assert.False(t, replayed(first))
	assertReplaysOfFirstRun(t, <-dups)
	assert.Equal(t, int32(1), h.calls.Load(), "one effect")
}

// On a store that cannot wake them, duplicates poll with backoff and
// still get the original's answer.
func TestWaitForOriginal_PollsAStoreWithoutWatch(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	t.Cleanup(func() { _ = mem.Close() })
	store := &reserveCountingStore{Store: mem}
	h := newBlockingHandler()
	wrapped := mustNew(t, store, server.WithWaitForOriginal(time.Minute)).Wrap(paymentsRoute, h)

	original := make(chan *httptest.ResponseRecorder, 1)
	go func() { original <- serve(wrapped, post("wait-2", paymentBody)) }()
	<-h.entered
	const n = 4
	dups := runDuplicates(wrapped, "wait-2", n)
	// 1 for the original, then each duplicate's first Reserve and a poll.
	require.Eventually(t, func() bool { return store.reserves.Load() >= 1+2*n }, 10*time.Second, time.Millisecond)
	close(h.release)

	require.Equal(t, http.StatusCreated, (<-original).Code)
	assertReplaysOfFirstRun(t, <-dups)
	assert.Equal(t, int32(1), h.calls.Load())
}

// Past the bound a duplicate gets 409 /in-progress with Retry-After, as
// without the option; the original is unaffected.
func TestWaitForOriginal_BoundElapsedAnswers409(t *testing.T) {
	t.Parallel()
	for name, store := range map[string]func() server.Store{
		"watched": func() server.Store { return server.NewMemoryStore() },
		"polled":  func() server.Store { return &reserveCountingStore{Store: server.NewMemoryStore()} },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := store()
			t.Cleanup(func() { _ = st.Close() })
			h := newBlockingHandler()
			wrapped := mustNew(t, st, server.WithWaitForOriginal(30*time.Millisecond)).Wrap(paymentsRoute, h)
			original := make(chan *httptest.ResponseRecorder, 1)
			go func() { original <- serve(wrapped, post("wait-3", paymentBody)) }()
			<-h.entered

			dup := serve(wrapped, post("wait-3", paymentBody))
			assert.Equal(t, http.StatusConflict, dup.Code)
			assert.Equal(t, server.ProblemInProgress, problemType(t, dup))
			assert.NotEmpty(t, dup.Header().Get("Retry-After"))

			close(h.release)
			assert.Equal(t, http.StatusCreated, (<-original).Code)
			assert.Equal(t, int32(1), h.calls.Load())
		})
	}
}

// An original that frees its key (a 5xx) leaves the waiting duplicate to
// run the handler itself, as a retry would.
func TestWaitForOriginal_FreedKeyRunsTheDuplicate(t *testing.T) {
	t.Parallel()
	store := &watchCountingStore{MemoryStore: server.NewMemoryStore()}
	t.Cleanup(func() { _ = store.Close() })
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	wrapped := mustNew(t, store, server.WithWaitForOriginal(time.Minute)).Wrap(paymentsRoute,
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if calls.Add(1) == 1 {
				close(entered)
				<-release
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]int{"run": 2})
		}))
	original := make(chan *httptest.ResponseRecorder, 1)
	go func() { original <- serve(wrapped, post("wait-4", paymentBody)) }()
	<-entered
	dups := runDuplicates(wrapped, "wait-4", 1)
	require.Eventually(t, func() bool { return store.watches.Load() >= 1 }, 10*time.Second, time.Millisecond)
	close(release)

	assert.Equal(t, http.StatusInternalServerError, (<-original).Code)
	dup := (<-dups)[0]
	require.Equal(t, http.StatusCreated, dup.Code)
	assert.False(t, replayed(dup), "the duplicate ran the handler")
	assert.Equal(t, int32(2), calls.Load())
}

// Off by default: a duplicate is answered 409 at once.
func TestWaitForOriginal_OffByDefault(t *testing.T) {
	t.Parallel()
	store := &watchCountingStore{MemoryStore: server.NewMemoryStore()}
	t.Cleanup(func() { _ = store.Close() })
	h := newBlockingHandler()
	wrapped := mustNew(t, store).Wrap(paymentsRoute, h)
	go serve(wrapped, post("wait-5", paymentBody))
	<-h.entered
	assert.Equal(t, http.StatusConflict, serve(wrapped, post("wait-5", paymentBody)).Code)
	assert.Equal(t, int32(0), store.watches.Load(), "nobody waited")
	close(h.release)
}
