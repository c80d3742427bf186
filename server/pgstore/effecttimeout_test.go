package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// A row of the effect's table locked by another connection (SELECT FOR
// UPDATE) cannot hold a CompleteTx handler: its transaction, begun under
// Held.Context, gives up at the store timeout and rolls back, the handler
// answers 503 with Retry-After and the layer frees the key; once the lock
// is gone each retry takes effect once.
func TestCompleteTxIsBoundedByTheStoreTimeout(t *testing.T) {
	t.Parallel()
	const storeTimeout = 300 * time.Millisecond
	store, pool, _ := openOnPool(t)
	schema := store.Schema()
	stock := pgx.Identifier{schema, "stock"}.Sanitize()
	_, err := pool.Exec(t.Context(), "CREATE TABLE "+stock+" (sku text PRIMARY KEY, sold int NOT NULL)")
	require.NoError(t, err)
	_, err = pool.Exec(t.Context(), "INSERT INTO "+stock+" VALUES ('a', 0)")
	require.NoError(t, err)

	idem, err := server.New(store, server.WithAnonymous(),
		server.WithStoreTimeout(storeTimeout), server.WithLease(3*storeTimeout))
	require.NoError(t, err)
	var mu sync.Mutex
	var timeouts []error
	api := idem.Wrap("/sales", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		held, _ := server.HeldFrom(r.Context())
		resp := server.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"sold":1}`)}
		ctx, cancel := held.Context(r.Context())
		defer cancel()
		err := pgx.BeginFunc(ctx, store.Pool(), func(tx pgx.Tx) error {
			if err := store.CompleteTx(ctx, tx, *held.Completion(resp)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "UPDATE "+stock+" SET sold = sold + 1 WHERE sku = 'a'")
			return err
		})
		switch {
		case errors.Is(err, server.ErrStoreTimeout) || pgstore.TimedOut(err):
			mu.Lock()
			timeouts = append(timeouts, err)
			mu.Unlock()
			held.MarkNotExecuted() // rolled back with its completion: nothing ran
			server.WriteStoreUnavailable(w)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		held.MarkCompleted()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	}))
	sell := func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/sales", strings.NewReader(`{"sku":"a"}`))
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() { defer close(done); api.ServeHTTP(rec, req) }()
		select {
		case <-done:
			return rec
		case <-time.After(30 * time.Second): // far beyond the bound: a hang
			t.Errorf("sale %s still waiting", key)
			return httptest.NewRecorder()
		}
	}

	locker, err := pgx.Connect(t.Context(), testenv.DirectDSN(testenv.PostgresDSN(t)))
	require.NoError(t, err)
	defer locker.Close(context.Background())
	tx, err := locker.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), "SELECT * FROM "+stock+" WHERE sku = 'a' FOR UPDATE")
	require.NoError(t, err)

	const requests = 3
	var wg sync.WaitGroup
	answers := make([]*httptest.ResponseRecorder, requests)
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = sell(fmt.Sprintf("k-%d", i))
		}()
	}
	wg.Wait()
	for i, rec := range answers {
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, "sale %d: %s", i, rec.Body)
		assert.NotEmpty(t, rec.Header().Get("Retry-After"))
		assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	}
	assert.Len(t, timeouts, requests)
	require.NoError(t, tx.Rollback(t.Context()))

	for i := range requests {
		key := fmt.Sprintf("k-%d", i)
		require.Equal(t, http.StatusCreated, sell(key).Code, "the key was freed: the retry runs")
		again := sell(key)
		require.Equal(t, http.StatusCreated, again.Code)
		assert.Equal(t, "true", again.Header().Get(server.ReplayedHeader))
	}
	var sold int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT sold FROM "+stock+" WHERE sku = 'a'").Scan(&sold))
	assert.Equal(t, requests, sold, "one sale per key")
}
