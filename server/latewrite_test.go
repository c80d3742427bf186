package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// errorAfterChain is middleware above the idempotency layer that works as
// echo's WrapMiddleware adapter does: it keeps the ResponseWriter the layer
// hands down, lets the handler return an error instead of writing, and
// writes that error into the kept writer once the layer has returned (echo
// runs its HTTPErrorHandler there).
func errorAfterChain(layer func(http.Handler) http.Handler, handle func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var inner http.ResponseWriter
		var err error
		layer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			inner = w
			err = handle(w, r)
		})).ServeHTTP(w, r)
		if err != nil && inner != nil {
			inner.Header().Set("Content-Type", "application/json")
			inner.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = fmt.Fprintf(inner, `{"error":%q}`, err.Error())
		}
	})
}

// effects counts a handler's effects per idempotency key.
type effects struct {
	mu sync.Mutex
	n  map[string]int
}

func (e *effects) add(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == nil {
		e.n = make(map[string]int)
	}
	e.n[key]++
	return e.n[key]
}

func (e *effects) of(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n[key]
}

// A write that code above the layer makes after the layer returned (echo's
// error handler under WrapMiddleware) never reaches another request: no
// status, header or body of one tenant shows in another's answer, a paying
// key pays once, and a handler that only returned an error wrote nothing,
// so it is answered 500 and its key released.
func TestWriteAfterChainNeverReachesAnotherRequest(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	idem, logs := r.idem, r.logs
	var paid effects
	var refusedRuns effects
	handler := errorAfterChain(func(h http.Handler) http.Handler { return idem.Wrap(paymentsRoute, h) },
		func(w http.ResponseWriter, r *http.Request) error {
			key := r.Header.Get(server.KeyHeader)
			tenant := r.Header.Get("X-Tenant")
			if strings.HasPrefix(key, "refuse-") {
				refusedRuns.add(key)
				return fmt.Errorf("card declined for %s", tenant)
			}
			run := paid.add(key)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_, _ = fmt.Fprintf(w, `{"tenant":%q,"key":%q,"run":%d}`, tenant, key, run)
			return nil
		})
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: 10 * time.Second}

	const keys = 300
	const workers = 8
	type answer struct {
		status int
		body   string
		replay bool
	}
	send := func(key, tenant string) answer {
		req, err := http.NewRequest(http.MethodPost, srv.URL+paymentsRoute, strings.NewReader(paymentBody))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tenant)
		req.Header.Set("X-Tenant", tenant)
		req.Header.Set(server.KeyHeader, key)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return answer{resp.StatusCode, string(b), resp.Header.Get(server.ReplayedHeader) == "true"}
	}

	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				tenant := fmt.Sprintf("tenant-%04d", i)
				if i%2 == 1 {
					key := fmt.Sprintf("refuse-%04d", i)
					for range 2 {
						a := send(key, tenant)
						assert.Equal(t, http.StatusInternalServerError, a.status, "a handler that wrote nothing: %s", a.body)
						assert.NotContains(t, a.body, "tenant-", "another request's bytes in %s's answer", tenant)
					}
					continue
				}
				key := fmt.Sprintf("pay-%04d", i)
				for attempt := range 2 {
					a := send(key, tenant)
					assert.Equal(t, http.StatusCreated, a.status, "%s attempt %d: %s", key, attempt, a.body)
					var got struct{ Tenant, Key string }
					if assert.NoError(t, json.Unmarshal([]byte(a.body), &got), "%s: %q", key, a.body) {
						assert.Equal(t, tenant, got.Tenant)
						assert.Equal(t, key, got.Key)
					}
					assert.Equal(t, attempt == 1, a.replay, "%s attempt %d", key, attempt)
				}
			}
		}()
	}
	for i := range keys {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	for i := 0; i < keys; i += 2 {
		key := fmt.Sprintf("pay-%04d", i)
		assert.Equal(t, 1, paid.of(key), "effects of %s", key)
	}
	assert.Equal(t, 2, refusedRuns.of("refuse-0001"), "a handler that wrote nothing leaves its key free")
	out := logs.String()
	assert.Contains(t, out, "dropped a write made after the handler returned")
	assert.Contains(t, out, "key_hash="+server.KeyHash("refuse-0001"))
	assert.NotContains(t, out, "refuse-0001", "raw keys are never logged")
}

// A write into the handler's writer after the layer returned is refused
// with ErrWriteAfterReturn, and the header map it then gets is a throwaway.
func TestWriteAfterReturnIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var kept http.ResponseWriter
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		kept = w
		w.WriteHeader(http.StatusCreated)
	}))
	rec := serve(wrapped, post("key-1", paymentBody))
	require.Equal(t, http.StatusCreated, rec.Code)

	kept.Header().Set("X-Late", "1")
	kept.WriteHeader(http.StatusTeapot)
	n, err := kept.Write([]byte("late"))
	assert.Zero(t, n)
	require.ErrorIs(t, err, server.ErrWriteAfterReturn)
	assert.Empty(t, rec.Header().Get("X-Late"))

	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.True(t, replayed(again))
	assert.Empty(t, again.Body.String())
	assert.Contains(t, r.logs.String(), "dropped a write made after the handler returned")
}

// A handler that wrote nothing (no WriteHeader, no Write) is not stored as
// an empty 200: the answer is 500 /internal and the key is free again.
func TestHandlerThatWroteNothingIsNotStored(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	calls := 0
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls++
		w.Header().Set("X-Set-But-Never-Written", "1")
	}))
	for range 2 {
		rec := serve(wrapped, post("key-1", paymentBody))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Equal(t, server.ProblemInternal, problemType(t, rec))
		assert.False(t, replayed(rec))
		assert.Empty(t, rec.Header().Get("X-Set-But-Never-Written"))
	}
	assert.Equal(t, 2, calls, "the key was released")
	assert.Contains(t, r.logs.String(), "handler wrote no response")
}
