package pgstore_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// openOnPool is a store on a pool of the test's own, in a schema of the
// test's own that also holds an orders table.
func openOnPool(t *testing.T) (*pgstore.Store, *pgxpool.Pool, string) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemtest_")
	pool, err := pgxpool.New(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := pgstore.New(t.Context(), pool, pgstore.WithSchema(schema))
	require.NoError(t, err)
	orders := pgx.Identifier{schema, "orders"}.Sanitize()
	_, err = pool.Exec(t.Context(), "CREATE TABLE "+orders+" (id text PRIMARY KEY)")
	require.NoError(t, err)
	return store, pool, orders
}

func countOrders(t *testing.T, pool *pgxpool.Pool, orders string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT count(*) FROM "+orders).Scan(&n))
	return n
}

// The handler's insert and the key's completion commit in one
// transaction: a retry replays, the order exists once.
func TestCompleteTxCommitsTheEffectWithTheKey(t *testing.T) {
	t.Parallel()
	store, pool, orders := openOnPool(t)
	idem, err := server.New(store, server.WithAnonymous())
	require.NoError(t, err)
	n := 0
	api := idem.Wrap("/orders", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		held, _ := server.HeldFrom(r.Context())
		resp := server.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}},
			Body: fmt.Appendf(nil, `{"id":"ord_%d"}`, n)}
		err := pgx.BeginFunc(r.Context(), store.Pool(), func(tx pgx.Tx) error {
			if err := store.CompleteTx(r.Context(), tx, *held.Completion(resp)); err != nil {
				return err
			}
			_, err := tx.Exec(r.Context(), "INSERT INTO "+orders+" (id) VALUES ($1)", fmt.Sprintf("ord_%d", n))
			return err
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		held.MarkCompleted()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.Status)
		_, _ = w.Write(resp.Body)
	}))
	var bodies []string
	for range 2 {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"a"}`))
		req.Header.Set("Idempotency-Key", "k-1")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
		bodies = append(bodies, rec.Body.String())
	}
	assert.Equal(t, bodies[0], bodies[1], "the retry replays the stored answer")
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, countOrders(t, pool, orders))
}

// A stale owner is fenced inside its transaction, which then rolls its
// effect back; a failing effect rolls the completion back.
func TestCompleteTxFencesAndRollsBack(t *testing.T) {
	t.Parallel()
	store, pool, orders := openOnPool(t)
	ctx := t.Context()
	scope := server.Scope{Principal: "p", Method: http.MethodPost, Route: "/orders"}
	insert := func(res server.Reservation, id string, fail bool) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			c := server.Completion{Reservation: res, Response: server.Response{Status: 201}, Retention: time.Hour}
			if err := store.CompleteTx(ctx, tx, c); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+orders+" (id) VALUES ($1)", id); err != nil {
				return err
			}
			if fail {
				return errors.New("effect failed")
			}
			return nil
		})
	}
	stale, _, err := store.Reserve(ctx, scope, "k", "fp", time.Millisecond)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	fresh, _, err := store.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, fresh, "the lease ended: a retry takes the key over")
	assert.ErrorIs(t, insert(*stale, "stale", false), server.ErrFenced)
	assert.Equal(t, 0, countOrders(t, pool, orders), "the fenced owner wrote nothing")

	require.Error(t, insert(*fresh, "x", true))
	_, rec, err := store.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, server.StateReserved, rec.State, "the completion rolled back with the effect")

	require.NoError(t, insert(*fresh, "ord_1", false))
	_, rec, err = store.Reserve(ctx, scope, "k", "fp", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, server.StateCompleted, rec.State)
	assert.Equal(t, 1, countOrders(t, pool, orders))
}
