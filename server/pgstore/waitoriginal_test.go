package pgstore_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
)

// countingStore counts Reserve calls, so a test knows its duplicates have
// polled the store at least once.
type countingStore struct {
	server.Store
	reserves atomic.Int32
}

func (s *countingStore) Reserve(ctx context.Context, scope server.Scope, key, fp string, lease time.Duration) (*server.Reservation, *server.Record, error) {
	s.reserves.Add(1)
	return s.Store.Reserve(ctx, scope, key, fp, lease)
}

// slowAPI is a payments route whose first run blocks until released.
type slowAPI struct {
	entered, release chan struct{}
	runs             atomic.Int32
}

func newSlowAPI() *slowAPI {
	return &slowAPI{entered: make(chan struct{}), release: make(chan struct{})}
}

func (a *slowAPI) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n := a.runs.Add(1)
	if n == 1 {
		close(a.entered)
		<-a.release
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = fmt.Fprintf(w, `{"run":%d}`, n)
}

// answer is what one request got.
type answer struct {
	status     int
	body       string
	replayed   bool
	retryAfter string
}

func postKey(t *testing.T, url, key string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(`{"amount":10}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, body: string(body),
		replayed: resp.Header.Get(server.ReplayedHeader) == "true", retryAfter: resp.Header.Get("Retry-After")}
}

// On Postgres, duplicates sent during a slow handler wait (polling) and
// get its answer; past the bound one gets 409 with Retry-After; the
// handler runs once.
func TestWaitForOriginalOnPostgres(t *testing.T) {
	t.Parallel()
	store := &countingStore{Store: open(t, testenv.PostgresDSN(t))}
	api := newSlowAPI()
	newSrv := func(wait time.Duration) *httptest.Server {
		idem, err := server.New(store, server.WithAnonymous(), server.WithWaitForOriginal(wait))
		require.NoError(t, err)
		srv := httptest.NewServer(idem.Wrap("/v1/payments", api))
		t.Cleanup(srv.Close)
		return srv
	}
	waiting, impatient := newSrv(time.Minute), newSrv(50*time.Millisecond)

	original := make(chan answer, 1)
	go func() { original <- postKey(t, waiting.URL, "pg-wait-1") }()
	<-api.entered

	busy := postKey(t, impatient.URL, "pg-wait-1")
	assert.Equal(t, http.StatusConflict, busy.status, "past the bound: 409")
	assert.NotEmpty(t, busy.retryAfter)

	const n = 6
	before := store.reserves.Load()
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = postKey(t, waiting.URL, "pg-wait-1")
		}()
	}
	require.Eventually(t, func() bool { return store.reserves.Load()-before >= 2*n }, 30*time.Second, time.Millisecond,
		"each duplicate reserved and polled")
	close(api.release)
	wg.Wait()

	first := <-original
	require.Equal(t, http.StatusCreated, first.status)
	for _, a := range answers {
		assert.Equal(t, http.StatusCreated, a.status, a.body)
		assert.True(t, a.replayed)
		assert.JSONEq(t, first.body, a.body)
	}
	assert.Equal(t, int32(1), api.runs.Load(), "one effect")
}

// A stale owner whose lease a retry took over on Postgres answers 409,
// never its own handler's answer as if it were final; the key's stored
// answer is the new owner's.
func TestFencedOwnerAnswersInProgressOnPostgres(t *testing.T) {
	t.Parallel()
	store := open(t, testenv.PostgresDSN(t))
	api := newSlowAPI()
	idem, err := server.New(store, server.WithAnonymous(), server.WithLease(300*time.Millisecond), server.WithStoreTimeout(100*time.Millisecond))
	require.NoError(t, err)
	srv := httptest.NewServer(idem.Wrap("/v1/payments", api))
	t.Cleanup(srv.Close)
	// Release the held handler before the server closes, whatever
	// failed: Close waits for it.
	release := sync.OnceFunc(func() { close(api.release) })
	t.Cleanup(release)

	stale := make(chan answer, 1)
	go func() { stale <- postKey(t, srv.URL, "pg-fence-1") }()
	<-api.entered
	var takeover answer
	require.Eventually(t, func() bool {
		takeover = postKey(t, srv.URL, "pg-fence-1")
		// 409 until the lease runs out; 503 when a store call outlived
		// the 100 ms store timeout on a loaded host, which a client retries.
		return takeover.status != http.StatusConflict && takeover.status != http.StatusServiceUnavailable
	}, 30*time.Second, 20*time.Millisecond, "a retry takes the key over once the lease ran out")
	require.Equal(t, http.StatusCreated, takeover.status)
	assert.JSONEq(t, `{"run":2}`, takeover.body)

	release()
	got := <-stale
	assert.Equal(t, http.StatusConflict, got.status, "the fenced owner's answer is not the key's: %s", got.body)
	assert.NotEmpty(t, got.retryAfter)
	assert.NotContains(t, got.body, `"run"`)

	replay := postKey(t, srv.URL, "pg-fence-1")
	assert.True(t, replay.replayed)
	assert.JSONEq(t, `{"run":2}`, replay.body)
}
