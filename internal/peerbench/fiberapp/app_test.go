package fiberapp

import (
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/storage/redis/v3"
	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/internal/testserver"
)

const body = `{"amount":1000,"currency":"EUR","reference":"load"}`

// post sends the load generator's request with key and returns the
// status and body.
func post(t *testing.T, app *fiber.App, key, payload string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(payload))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tenant")
	req.Header.Set(KeyHeader, key)
	resp, err := app.Test(req, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// key is a fresh key of 36 characters, the length the middleware wants.
func key() string { return rand.Text()[:25] + "-0000000000" }

func count(t *testing.T, store testserver.Store) int {
	t.Helper()
	n, err := store.CountPayments(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkGuard: behind the middleware a retry with the same key replays
// the first answer and makes no second payment; without it, it does.
func checkGuard(t *testing.T, storage fiber.Storage) {
	store := testserver.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	app := New(store, true, storage)
	k := key()
	s1, b1 := post(t, app, k, body)
	s2, b2 := post(t, app, k, body)
	if s1 != http.StatusCreated || s2 != http.StatusCreated || b1 != b2 || !strings.Contains(b1, `"amount":1000`) {
		t.Fatalf("answers %d %s and %d %s: want one 201 replayed", s1, b1, s2, b2)
	}
	if n := count(t, store); n != 1 {
		t.Fatalf("%d payments for one key, want 1", n)
	}
}

func TestMiddlewareReplaysOnMemory(t *testing.T) { checkGuard(t, nil) }

func TestMiddlewareReplaysOnPostgres(t *testing.T) {
	dsn := os.Getenv("IDEM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("IDEM_TEST_POSTGRES not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	schema := "idem_peerbench_test_" + strings.ToLower(rand.Text()[:8])
	st, err := OpenPGStorage(ctx, dsn, schema, "fiber_idempotency")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = st.Close()
		if conn, err := pgx.Connect(context.Background(), dsn); err == nil {
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			_ = conn.Close(context.Background())
		}
	})
	checkGuard(t, st)
	// An expired record is no record.
	if err := st.Set("gone", []byte("x"), -time.Second); err != nil {
		t.Fatal(err)
	}
	if v, err := st.Get("gone"); err != nil || v != nil {
		t.Fatalf("expired record read as %q, %v", v, err)
	}
}

func TestMiddlewareReplaysOnRedis(t *testing.T) {
	url := os.Getenv("IDEM_TEST_REDIS")
	if url == "" {
		t.Skip("IDEM_TEST_REDIS not set")
	}
	rs := redis.New(redis.Config{URL: url})
	prefix := "idem-peerbench-test-" + rand.Text()[:8] + ":"
	t.Cleanup(func() {
		keys, _ := rs.Conn().Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			rs.Conn().Del(context.Background(), keys...)
		}
		_ = rs.Close()
	})
	st := Prefixed(rs, prefix)
	checkGuard(t, st)
	keys, err := rs.Conn().Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys under the prefix: %q, %v; want the one record", keys, err)
	}
	if err := st.Reset(); err == nil {
		t.Fatal("Reset of a prefixed storage would flush the database")
	}
}

// The unprotected app makes a payment per request, key or not, and
// refuses what the benchmark's other handlers refuse.
func TestUnprotectedAppChecksAndCreates(t *testing.T) {
	store := testserver.NewMemoryStore()
	defer store.Close()
	app := New(store, false, nil)
	k := key()
	for range 2 {
		if s, b := post(t, app, k, body); s != http.StatusCreated {
			t.Fatalf("%d %s", s, b)
		}
	}
	if n := count(t, store); n != 2 {
		t.Fatalf("%d payments, want 2", n)
	}
	for payload, want := range map[string]int{
		`{"amount":0,"currency":"EUR"}`:                       http.StatusBadRequest,
		`{"amount":1,"currency":"eur"}`:                       http.StatusBadRequest,
		`{"amount":1,"currency":"EUR","extra":1}`:             http.StatusBadRequest,
		`{"amount":1,"currency":"EUR"} {}`:                    http.StatusBadRequest,
		`{"amount":1,"currency":"EUR","reference":"a\u0007"}`: http.StatusBadRequest,
	} {
		if s, b := post(t, app, key(), payload); s != want {
			t.Errorf("%s: %d %s, want %d", payload, s, b, want)
		}
	}
}
