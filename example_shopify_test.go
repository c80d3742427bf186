package idem_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
)

// An inventory adjustment through Shopify's Admin GraphQL API: the client
// writes the @idempotent(key:) directive into the mutation, resends it
// after a lost answer, and Shopify (here its simulator) returns the
// original result.
func Example_shopify() {
	srv, err := idemtest.Start(idemtest.WithDialect("shopify"))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	client, err := idem.New(idem.WithDialect(dialect.Shopify()))
	if err != nil {
		panic(err)
	}
	defer client.Close()

	body := `{"query":"mutation adjust($input: InventoryAdjustQuantitiesInput!) { inventoryAdjustQuantities(input: $input) { userErrors { code } } }",` +
		`"variables":{"input":{"reason":"restock","name":"available","changes":[{"delta":5,` +
		`"inventoryItemId":"gid://shopify/InventoryItem/123","locationId":"gid://shopify/Location/456"}]}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/admin/api/2026-04/graphql.json", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Shopify-Access-Token", "shpat_example")

	ctx := context.Background()
	in, err := client.Begin(ctx, "restock-42", req)
	if err != nil {
		panic(err)
	}
	srv.LoseNextResponses(1) // the adjustment happens, the answer is lost
	resp, err := client.Do(ctx, in)
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.StatusCode, in.State, "attempts:", in.Attempts)
	fmt.Println("adjustments:", srv.InventoryAdjustments())
	// Output:
	// 200 succeeded attempts: 2
	// adjustments: 1
}
