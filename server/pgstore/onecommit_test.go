package pgstore_test

import (
	"crypto/rand"
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

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// orderHandler makes one order row per execution, through Queue or,
// with interactive, through Tx after reading; fail answers 500 after
// making the row, which must then roll back.
func orderHandler(orders string, interactive bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once, ok := pgstore.OnceFrom(r.Context())
		if !ok {
			http.Error(w, "no one-commit transaction", http.StatusInternalServerError)
			return
		}
		id := "ord_" + rand.Text()
		if interactive {
			tx, err := once.Tx(r.Context())
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			var n int
			if err := tx.QueryRow(r.Context(), "SELECT count(*) FROM "+orders).Scan(&n); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			if _, err := tx.Exec(r.Context(), "INSERT INTO "+orders+" (id) VALUES ($1)", id); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		} else {
			once.Queue("INSERT INTO "+orders+" (id) VALUES ($1)", id)
		}
		if r.URL.Query().Get("fail") != "" {
			http.Error(w, "failed after the insert", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%q}`, id)
	})
}

func post(h http.Handler, target, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// 50 concurrent duplicates of each key: one order per key, and every
// answer the first one's, the others marked replayed.
func TestOneCommitConcurrentDuplicatesMakeOneEffect(t *testing.T) {
	t.Parallel()
	for _, interactive := range []bool{false, true} {
		t.Run(fmt.Sprintf("interactive=%v", interactive), func(t *testing.T) {
			t.Parallel()
			store, pool, orders := openOnPool(t)
			idem, err := server.New(store, server.WithAnonymous())
			require.NoError(t, err)
			api, err := idem.WrapOneCommit("/orders", orderHandler(orders, interactive))
			require.NoError(t, err)
			const keys, dups = 4, 50
			type answer struct {
				status   int
				body     string
				replayed bool
			}
			answers := make([][]answer, keys)
			var wg sync.WaitGroup
			for k := range keys {
				answers[k] = make([]answer, dups)
				for d := range dups {
					wg.Add(1)
					go func() {
						defer wg.Done()
						rec := post(api, "/orders", fmt.Sprintf("k-%d", k), `{"sku":"a"}`)
						answers[k][d] = answer{rec.Code, rec.Body.String(), rec.Header().Get(server.ReplayedHeader) == "true"}
					}()
				}
			}
			wg.Wait()
			assert.Equal(t, keys, countOrders(t, pool, orders), "one order per key")
			for k := range keys {
				first := 0
				for _, a := range answers[k] {
					require.Equal(t, http.StatusCreated, a.status, a.body)
					assert.Equal(t, answers[k][0].body, a.body, "every answer of key %d is the same", k)
					if !a.replayed {
						first++
					}
				}
				assert.Equal(t, 1, first, "key %d: one answer is the original, the rest replays", k)
			}
		})
	}
}

// Another body under a used key is 422; a handler that answers 500
// leaves no order and the key free, so the retry runs and commits.
func TestOneCommitReusedKeyAndRollback(t *testing.T) {
	t.Parallel()
	for _, interactive := range []bool{false, true} {
		t.Run(fmt.Sprintf("interactive=%v", interactive), func(t *testing.T) {
			t.Parallel()
			store, pool, orders := openOnPool(t)
			idem, err := server.New(store, server.WithAnonymous())
			require.NoError(t, err)
			api, err := idem.WrapOneCommit("/orders", orderHandler(orders, interactive))
			require.NoError(t, err)

			rec := post(api, "/orders?fail=1", "k-fail", `{"sku":"a"}`)
			assert.Equal(t, http.StatusInternalServerError, rec.Code)
			assert.Equal(t, 0, countOrders(t, pool, orders), "the failed answer rolled its order back")
			rec = post(api, "/orders", "k-fail", `{"sku":"a"}`)
			require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
			assert.Empty(t, rec.Header().Get(server.ReplayedHeader), "the key was free: the retry ran")

			rec = post(api, "/orders", "k-fail", `{"sku":"b"}`)
			assert.Equal(t, http.StatusUnprocessableEntity, rec.Code, rec.Body.String())
			assert.Equal(t, 1, countOrders(t, pool, orders))
		})
	}
}

// A store that cannot commit once is refused when the route is wrapped.
func TestWrapOneCommitRefusesAStoreThatCannot(t *testing.T) {
	t.Parallel()
	mem := server.NewMemoryStore()
	defer mem.Close()
	idem, err := server.New(mem, server.WithAnonymous())
	require.NoError(t, err)
	_, err = idem.WrapOneCommit("/orders", http.NotFoundHandler())
	assert.True(t, errors.Is(err, server.ErrOneCommitUnsupported), "%v", err)
}

// A request whose key is held by a transaction that does not end gives
// up at the store timeout: 503, nothing written, and the key is then
// free for its retry.
func TestOneCommitIsBoundedByTheStoreTimeout(t *testing.T) {
	t.Parallel()
	store, pool, orders := openOnPool(t)
	idem, err := server.New(store, server.WithAnonymous(), server.WithStoreTimeout(200*time.Millisecond),
		server.WithLease(time.Second))
	require.NoError(t, err)
	api, err := idem.WrapOneCommit("/orders", orderHandler(orders, false))
	require.NoError(t, err)

	// The layer's principal for anonymous requests, as stored.
	require.Equal(t, http.StatusCreated, post(api, "/orders", "k-probe", `{"sku":"a"}`).Code)
	records := pgx.Identifier{store.Schema(), "idempotency_records"}.Sanitize()
	var principal string
	require.NoError(t, pool.QueryRow(t.Context(), "SELECT principal FROM "+records+" WHERE key = 'k-probe'").Scan(&principal))

	// Another transaction holds the key's unique entry, uncommitted.
	blocker, err := pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = blocker.Exec(t.Context(), "INSERT INTO "+records+
		` (principal, method, route, key, fingerprint, state, token, lease_expires, created_at)
		 VALUES ($1, 'POST', '/orders', 'k-held', 'fp', 'reserved', 't', now() + interval '1 hour', now())`, principal)
	require.NoError(t, err)

	answered := make(chan *httptest.ResponseRecorder, 1)
	go func() { answered <- post(api, "/orders", "k-held", `{"sku":"a"}`) }()
	var rec *httptest.ResponseRecorder
	select {
	case rec = <-answered:
	case <-time.After(30 * time.Second):
		_ = blocker.Rollback(t.Context())
		t.Fatal("the request waited on the held key past the store timeout")
	}
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	require.NoError(t, blocker.Rollback(t.Context()))
	assert.Equal(t, 1, countOrders(t, pool, orders), "the probe's order alone")

	rec = post(api, "/orders", "k-held", `{"sku":"a"}`)
	assert.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.Equal(t, 2, countOrders(t, pool, orders))
}
