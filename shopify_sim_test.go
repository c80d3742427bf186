package idem

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// adjustRequest is a GraphQL POST of inventoryAdjustQuantities to the
// Shopify simulator, without the @idempotent directive: the client
// places it.
func adjustRequest(t testing.TB, baseURL string, delta int, itemID string) *http.Request {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"query": "mutation adjust($input: InventoryAdjustQuantitiesInput!) {\n  inventoryAdjustQuantities(input: $input) {\n" +
			"    inventoryAdjustmentGroup { id changes { delta quantityAfterChange } }\n    userErrors { code field message }\n  }\n}",
		"variables": map[string]any{"input": map[string]any{"reason": "restock", "name": "available", "changes": []any{
			map[string]any{"delta": delta, "inventoryItemId": itemID, "locationId": "gid://shopify/Location/1"},
		}}},
	})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, baseURL+"/admin/api/2026-04/graphql.json", strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Shopify-Access-Token", "shpat_"+testToken)
	return req
}

// The Shopify dialect against its simulator: the client writes the key
// into the GraphQL document, resends it after a lost answer and reads
// Shopify's 200 answers (replays, user errors) from their bodies.
func TestShopifyDialectAgainstItsSimulator(t *testing.T) {
	t.Parallel()
	t.Run("lost answer", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
		c := newTestClient(t, WithDialect(dialect.Shopify()))
		for i := range 3 {
			srv.LoseNextResponses(1)
			in := begin(t, c, fmt.Sprintf("lost/%d", i), adjustRequest(t, srv.URL, 5, fmt.Sprint("gid://shopify/InventoryItem/", i)))
			resp, err := c.Do(context.Background(), in)
			require.NoError(t, err, "intent %d", i)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			body := readBody(t, resp)
			assert.Contains(t, body, `"quantityAfterChange":5`, "the replay of the one adjustment")
			assert.Equal(t, Succeeded, in.State)
			assert.Equal(t, 2, in.Attempts)
		}
		assert.Equal(t, 3, srv.InventoryAdjustments())
		assert.Equal(t, 6, srv.Requests())
	})
	t.Run("key reused with other variables", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
		sameKey := func() (string, error) { return "4f5b6ebf-143c-4da5-8d0f-fb8553bfd85d", nil }
		first := newTestClient(t, WithDialect(dialect.Shopify()), WithKeyGenerator(sameKey))
		_, err := first.Do(context.Background(), begin(t, first, "", adjustRequest(t, srv.URL, 5, "gid://shopify/InventoryItem/7")))
		require.NoError(t, err)
		second := newTestClient(t, WithDialect(dialect.Shopify()), WithKeyGenerator(sameKey))
		in := begin(t, second, "", adjustRequest(t, srv.URL, 6, "gid://shopify/InventoryItem/7"))
		_, err = second.Do(context.Background(), in)
		require.ErrorIs(t, err, ErrKeyReused)
		assert.Equal(t, Failed, in.State)
		_, err = second.Do(context.Background(), in)
		require.ErrorIs(t, err, ErrKeyReused, "the stored 200 is read again through the dialect")
		assert.Equal(t, 1, srv.InventoryAdjustments())
	})
	t.Run("concurrent duplicate in progress", func(t *testing.T) {
		t.Parallel()
		// Two processes sharing one keystore send the same intent at once:
		// the second meets the first still executing, is told
		// IDEMPOTENCY_CONCURRENT_REQUEST, waits, and gets the replay.
		srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
		srv.SetHandlerDelay(200 * time.Millisecond)
		store := keystore.NewMemory()
		opts := []Option{WithStore(nopCloseStore{store}), WithDialect(dialect.Shopify()), WithMaxAttempts(10),
			WithBackoffPolicy(func(int) time.Duration { return 50 * time.Millisecond })}
		a := newTestClient(t, opts...)
		b := newTestClient(t, append(opts, WithRequestEditor(func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-Shopify-Access-Token", "shpat_"+testToken)
			return nil
		}))...)
		in := begin(t, a, "dup", adjustRequest(t, srv.URL, 3, "gid://shopify/InventoryItem/9"))
		twin, err := b.Resume(context.Background(), in.Key)
		require.NoError(t, err)
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errA = a.Do(context.Background(), in)
		}()
		require.Eventually(t, func() bool { return srv.Holding() == 1 }, 5*time.Second, 5*time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errB = b.Do(context.Background(), twin)
		}()
		wg.Wait()
		require.NoError(t, errA)
		require.NoError(t, errB)
		assert.Equal(t, Succeeded, in.State)
		assert.Equal(t, Succeeded, twin.State)
		assert.GreaterOrEqual(t, twin.Attempts, 2, "the twin was told the first was in progress")
		assert.Equal(t, 1, srv.InventoryAdjustments())
	})
	t.Run("a user error fails an intent nothing was sent of", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
		c := newTestClient(t, WithDialect(dialect.Shopify()))
		in := begin(t, c, "", adjustRequest(t, srv.URL, 1, "item-1"))
		resp, err := c.Do(context.Background(), in)
		require.ErrorIs(t, err, ErrFinalFailure)
		require.NotNil(t, resp, "the final answer comes with the error")
		assert.Contains(t, readBody(t, resp), "INVALID_INVENTORY_ITEM")
		assert.Equal(t, Failed, in.State)
		assert.Zero(t, srv.InventoryAdjustments())
	})
	t.Run("transport places the key and retries a lost answer", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
		c := newTestClient(t, WithDialect(dialect.Shopify()))
		api := &http.Client{Transport: c.Transport()}
		srv.LoseNextResponses(1)
		resp, err := api.Do(adjustRequest(t, srv.URL, 4, "gid://shopify/InventoryItem/4"))
		require.NoError(t, err)
		assert.Contains(t, readBody(t, resp), `"quantityAfterChange":4`)
		assert.Equal(t, 1, srv.InventoryAdjustments())
		assert.Equal(t, 2, srv.Requests())
	})
	t.Run("transport sends a query unkeyed", func(t *testing.T) {
		t.Parallel()
		srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
		c := newTestClient(t, WithDialect(dialect.Shopify()))
		api := &http.Client{Transport: c.Transport()}
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/admin/api/2026-04/graphql.json", strings.NewReader(`{"query":"query { shop { name } }"}`))
		require.NoError(t, err)
		resp, err := api.Do(req)
		require.NoError(t, err, "a query has no mutation to key: it is sent as it is")
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Contains(t, readBody(t, resp), "directive is required", "the simulator saw no directive: none was placed")
		assert.Equal(t, 1, srv.Requests())
	})
	t.Run("a body with no place for the key", func(t *testing.T) {
		t.Parallel()
		c := newTestClient(t, WithDialect(dialect.Shopify()))
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/admin/api/2026-04/graphql.json",
			strings.NewReader(`{"query":"query { shop { name } }"}`))
		require.NoError(t, err)
		_, err = c.Begin(context.Background(), "", req)
		require.ErrorIs(t, err, ErrInvalidRequest)
		require.ErrorIs(t, err, dialect.ErrNoKeyPlace)
	})
}

// A key the client wrote into the GraphQL document is not damage, and a
// changed variable is: the stored body is checked against the fingerprint
// of the body without the directive.
func TestShopifyKeyInTheDocumentIsNotDamage(t *testing.T) {
	t.Parallel()
	for _, damaged := range []bool{false, true} {
		t.Run(fmt.Sprintf("damaged=%t", damaged), func(t *testing.T) {
			t.Parallel()
			srv := idemtest.NewServer(t, idemtest.WithDialect("shopify"))
			store := keystore.NewMemory()
			c := newTestClient(t, WithStore(nopCloseStore{store}), WithDialect(dialect.Shopify()))
			in := begin(t, c, "", adjustRequest(t, srv.URL, 777, "gid://shopify/InventoryItem/1"))
			rec, err := store.Get(context.Background(), in.Key)
			require.NoError(t, err)
			require.Contains(t, string(rec.Body), `@idempotent(key: \"`+in.Key+`\")`, "the stored body carries the directive")
			if damaged {
				rec.Body = []byte(strings.Replace(string(rec.Body), "777", "977", 1))
				require.NoError(t, store.Update(context.Background(), rec))
			}
			_, err = c.Do(context.Background(), in)
			if damaged {
				require.ErrorIs(t, err, keystore.ErrCorrupt)
				assert.Zero(t, srv.Requests())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1, srv.InventoryAdjustments())
		})
	}
}
