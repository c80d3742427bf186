package testserver_test

import (
	"context"
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

	"github.com/idemkit/idem/internal/testserver"
)

const shopifyPath = "/admin/api/2026-04/graphql.json"

// shopifyServer is the reference server speaking the Shopify dialect.
type shopifyServer struct {
	*testserver.Server
	url string
}

func startShopify(t *testing.T, opts ...testserver.Option) *shopifyServer {
	t.Helper()
	srv, err := testserver.New(append([]testserver.Option{testserver.WithServerDialect("shopify")}, opts...)...)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close()
	})
	return &shopifyServer{Server: srv, url: ts.URL}
}

// adjustQuery is Shopify's changelog example with its input in a
// variable; directive is written after the arguments ("" for none).
func adjustQuery(directive string) string {
	return `mutation adjust($input: InventoryAdjustQuantitiesInput!) {
  inventoryAdjustQuantities(input: $input) ` + directive + ` {
    inventoryAdjustmentGroup { id reason changes { name delta quantityAfterChange } }
    userErrors { code field message }
  }
}`
}

func adjustVariables(delta int) map[string]any {
	return map[string]any{"input": map[string]any{
		"reason": "restock", "name": "available",
		"changes": []any{map[string]any{"delta": delta, "inventoryItemId": "gid://shopify/InventoryItem/123", "locationId": "gid://shopify/Location/456"}},
	}}
}

// post sends a GraphQL request and decodes the answer.
func (s *shopifyServer) post(t *testing.T, query string, variables map[string]any) (int, map[string]any) {
	t.Helper()
	return s.postAs(t, "shpat_test", query, variables)
}

// postAs is post with the access token given.
func (s *shopifyServer) postAs(t *testing.T, token, query string, variables map[string]any) (int, map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": variables})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+shopifyPath, strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Shopify-Access-Token", token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc), "%d %s", resp.StatusCode, b)
	return resp.StatusCode, doc
}

// payloadOf is data.inventoryAdjustQuantities of an answer.
func payloadOf(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	data, ok := doc["data"].(map[string]any)
	require.True(t, ok, "no data in %v", doc)
	p, ok := data["inventoryAdjustQuantities"].(map[string]any)
	require.True(t, ok, "no payload in %v", doc)
	return p
}

// userErrorCode is the code of the payload's only user error, "" if none.
func userErrorCode(t *testing.T, doc map[string]any) string {
	t.Helper()
	errs, _ := payloadOf(t, doc)["userErrors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	require.Len(t, errs, 1)
	return errs[0].(map[string]any)["code"].(string)
}

func TestShopifyDialect_ReplaysTheFirstResultForTheSameKey(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	q := adjustQuery(`@idempotent(key: "4f5b6ebf-143c-4da5-8d0f-fb8553bfd85d")`)
	status, first := s.post(t, q, adjustVariables(5))
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, userErrorCode(t, first))
	group := payloadOf(t, first)["inventoryAdjustmentGroup"].(map[string]any)
	assert.Equal(t, "restock", group["reason"])
	assert.Equal(t, []any{map[string]any{"name": "available", "delta": 5.0, "quantityAfterChange": 5.0}}, group["changes"])
	assert.NotContains(t, group, "createdAt", "only the selected fields are answered")

	_, replay := s.post(t, q, adjustVariables(5))
	assert.Equal(t, first, replay, "the result of the original operation")
	assert.Equal(t, 1, s.InventoryAdjustments())

	// The key may also come from a variable; another key is another
	// adjustment.
	vars := adjustVariables(5)
	vars["k"] = "second"
	_, other := s.post(t, strings.Replace(adjustQuery("@idempotent(key: $k)"), "($input: InventoryAdjustQuantitiesInput!)", "($input: InventoryAdjustQuantitiesInput!, $k: String!)", 1), vars)
	assert.Equal(t, 10.0, payloadOf(t, other)["inventoryAdjustmentGroup"].(map[string]any)["changes"].([]any)[0].(map[string]any)["quantityAfterChange"])
	assert.Equal(t, 2, s.InventoryAdjustments())
}

func TestShopifyDialect_KeyWithOtherVariablesIsAMismatch(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	q := adjustQuery(`@idempotent(key: "k-1")`)
	_, first := s.post(t, q, adjustVariables(5))
	require.Empty(t, userErrorCode(t, first))
	status, reused := s.post(t, q, adjustVariables(6))
	assert.Equal(t, http.StatusOK, status, "GraphQL answers a user error with 200")
	assert.Equal(t, "IDEMPOTENCY_KEY_PARAMETER_MISMATCH", userErrorCode(t, reused))
	assert.Nil(t, payloadOf(t, reused)["inventoryAdjustmentGroup"])
	assert.Equal(t, 1, s.InventoryAdjustments())
}

func TestShopifyDialect_ConcurrentDuplicateIsInProgress(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	s.Faults().SetHandlerDelay(300 * time.Millisecond)
	q := adjustQuery(`@idempotent(key: "slow")`)
	var wg sync.WaitGroup
	var first map[string]any
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, first = s.post(t, q, adjustVariables(1))
	}()
	require.Eventually(t, func() bool { return s.Faults().Holding() == 1 }, 5*time.Second, 5*time.Millisecond)
	status, dup := s.post(t, q, adjustVariables(1))
	wg.Wait()
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "IDEMPOTENCY_CONCURRENT_REQUEST", userErrorCode(t, dup))
	assert.Empty(t, userErrorCode(t, first))
	assert.Equal(t, 1, s.InventoryAdjustments())
}

func TestShopifyDialect_RequiresTheDirective(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	status, doc := s.post(t, adjustQuery(""), adjustVariables(5))
	assert.Equal(t, http.StatusOK, status)
	assert.NotContains(t, doc, "data", "a request error: no data")
	assert.NotEmpty(t, doc["errors"])
	assert.Zero(t, s.InventoryAdjustments())
}

func TestShopifyDialect_BusinessErrorsAreUserErrors(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	for i, c := range []struct {
		change map[string]any
		code   string
	}{
		{map[string]any{"delta": 1, "inventoryItemId": "nope", "locationId": "gid://shopify/Location/1"}, "INVALID_INVENTORY_ITEM"},
		{map[string]any{"delta": 1, "inventoryItemId": "gid://shopify/InventoryItem/1", "locationId": "nope"}, "INVALID_LOCATION"},
		{map[string]any{"delta": 1, "inventoryItemId": "gid://shopify/InventoryItem/1", "locationId": "gid://shopify/Location/1", "changeFromQuantity": 7}, "CHANGE_FROM_QUANTITY_STALE"},
		{map[string]any{"delta": 1_000_000_001, "inventoryItemId": "gid://shopify/InventoryItem/1", "locationId": "gid://shopify/Location/1"}, "INVALID_QUANTITY_TOO_HIGH"},
	} {
		vars := map[string]any{"input": map[string]any{"reason": "correction", "name": "available", "changes": []any{c.change}}}
		_, doc := s.post(t, adjustQuery(fmt.Sprintf(`@idempotent(key: "biz-%d")`, i)), vars)
		assert.Equal(t, c.code, userErrorCode(t, doc))
	}
	assert.Zero(t, s.InventoryAdjustments())
	// changeFromQuantity that matches is applied.
	_, doc := s.post(t, adjustQuery(`@idempotent(key: "cas")`), map[string]any{"input": map[string]any{"reason": "correction", "name": "available",
		"changes": []any{map[string]any{"delta": 2, "inventoryItemId": "gid://shopify/InventoryItem/1", "locationId": "gid://shopify/Location/1", "changeFromQuantity": 0}}}})
	assert.Empty(t, userErrorCode(t, doc))
	assert.Equal(t, 1, s.InventoryAdjustments())
}

func TestShopifyDialect_InlineInputAndMalformedBodies(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	q := `mutation { inventoryAdjustQuantities(input: {reason: "restock", name: "available", changes: [{delta: 3, inventoryItemId: "gid://shopify/InventoryItem/9", locationId: "gid://shopify/Location/9"}]}) @idempotent(key: "inline") { userErrors { code } } }`
	_, doc := s.post(t, q, nil)
	assert.Equal(t, map[string]any{"userErrors": []any{}}, payloadOf(t, doc))
	assert.Equal(t, 1, s.InventoryAdjustments())

	for _, body := range []string{`not json`, `{"variables":{}}`, `{"query":"mutation {"}`} {
		resp, err := http.Post(s.url+shopifyPath, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusOK}, resp.StatusCode, body)
		assert.Contains(t, string(b), `"errors"`, body)
		assert.NotContains(t, string(b), `"data"`, body)
	}
	status, doc := s.post(t, `mutation { shopUpdate @idempotent(key: "x") { id } }`, nil)
	assert.Equal(t, http.StatusOK, status)
	assert.NotEmpty(t, doc["errors"])
	assert.Equal(t, 1, s.InventoryAdjustments())
}

// Keys are scoped by the access token Shopify's requests carry in
// X-Shopify-Access-Token: the same key under another token is another
// adjustment, under the same token a replay.
func TestShopifyDialect_KeysAreScopedByTheAccessToken(t *testing.T) {
	t.Parallel()
	s := startShopify(t)
	q := adjustQuery(`@idempotent(key: "shared")`)
	_, a := s.postAs(t, "shpat_one", q, adjustVariables(1))
	_, b := s.postAs(t, "shpat_two", q, adjustVariables(1))
	_, a2 := s.postAs(t, "shpat_one", q, adjustVariables(1))
	assert.Equal(t, a, a2)
	assert.NotEqual(t, a, b)
	assert.Equal(t, 2, s.InventoryAdjustments())
}
