package dialect

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// adjustBody is a GraphQL request for inventoryAdjustQuantities, the
// mutation of Shopify's changelog example, with its input in variables.
const adjustBody = `{"query":"mutation adjust($input: InventoryAdjustQuantitiesInput!) {\n  inventoryAdjustQuantities(input: $input) {\n    inventoryAdjustmentGroup { id }\n    userErrors { code message }\n  }\n}","variables":{"input":{"reason":"restock","name":"available","changes":[{"delta":5,"inventoryItemId":"gid://shopify/InventoryItem/123","locationId":"gid://shopify/Location/456"}]}}}`

func queryOf(t *testing.T, body []byte) string {
	t.Helper()
	var doc struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	return doc.Query
}

func TestPlaceGraphQLKeyPutsTheDirectiveAfterTheArguments(t *testing.T) {
	out, err := PlaceGraphQLKey([]byte(adjustBody), "4f5b6ebf-143c-4da5-8d0f-fb8553bfd85d")
	if err != nil {
		t.Fatal(err)
	}
	want := `inventoryAdjustQuantities(input: $input) @idempotent(key: "4f5b6ebf-143c-4da5-8d0f-fb8553bfd85d") {`
	if q := queryOf(t, out); !strings.Contains(q, want) {
		t.Fatalf("query %q lacks %q", q, want)
	}
	// Only the query's text changed: the variables are the same bytes.
	if !strings.HasSuffix(string(out), adjustBody[strings.Index(adjustBody, `,"variables"`):]) {
		t.Errorf("variables changed: %s", out)
	}
	key, rest, found, err := SplitGraphQLKey(out)
	if err != nil || !found || key != "4f5b6ebf-143c-4da5-8d0f-fb8553bfd85d" {
		t.Fatalf("SplitGraphQLKey = %q, %v, %v", key, found, err)
	}
	if string(rest) != adjustBody {
		t.Errorf("rest is not the body placed into:\n%s\n%s", rest, adjustBody)
	}
}

func TestPlaceGraphQLKeyRoundTripsEscapesAndFieldsWithoutArguments(t *testing.T) {
	bodies := []string{
		// Escapes before the field shift the raw offsets: \u00e9 is two
		// bytes decoded, \ud83d\ude00 four, \" one.
		`{"variables":{},"query":"# caf\u00e9 \ud83d\ude00 \"x\"\nmutation { shopUpdate { userErrors { message } } }"}`,
		// An inline input literal with a string holding a parenthesis.
		`{"query":"mutation{refundCreate(input:{orderId:\"gid://shopify/Order/1\",note:\"a ) b\"}){refund{id}}}"}`,
		// An aliased field, and HTML characters json.Marshal escapes.
		` {"query" : "mutation M { r: refundCreate(input: $i) { refund { id } } }", "operationName": "M"} `,
	}
	for _, body := range bodies {
		for _, key := range []string{"k-1", `a"b\c<&>`} {
			out, err := PlaceGraphQLKey([]byte(body), key)
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			got, rest, found, err := SplitGraphQLKey(out)
			if err != nil || !found || got != key {
				t.Fatalf("%s: SplitGraphQLKey = %q, %v, %v", out, got, found, err)
			}
			if string(rest) != body {
				t.Errorf("rest %s\nwant %s", rest, body)
			}
		}
	}
}

func TestSplitGraphQLKeyReadsAKeyTheCallerWrote(t *testing.T) {
	body := `{"query":"mutation { inventoryAdjustQuantities(input: {reason: \"restock\"}) @idempotent(key:\"caller-key\") { userErrors { code } } }"}`
	key, rest, found, err := SplitGraphQLKey([]byte(body))
	if err != nil || !found || key != "caller-key" {
		t.Fatalf("SplitGraphQLKey = %q, %v, %v", key, found, err)
	}
	if strings.Contains(string(rest), "idempotent") {
		t.Errorf("rest still carries the directive: %s", rest)
	}
	if _, err := PlaceGraphQLKey([]byte(body), "other"); !errors.Is(err, ErrNoKeyPlace) {
		t.Errorf("PlaceGraphQLKey over a directive = %v, want ErrNoKeyPlace", err)
	}
	key, rest, found, err = SplitGraphQLKey([]byte(adjustBody))
	if err != nil || found || key != "" || string(rest) != adjustBody {
		t.Errorf("no directive: SplitGraphQLKey = %q, %q, %v, %v", key, rest, found, err)
	}
}

func TestGraphQLKeyRefusesBodiesWithNoPlaceForIt(t *testing.T) {
	bad := map[string]string{
		"not JSON":          `mutation { x }`,
		"not an object":     `["query"]`,
		"no query":          `{"variables":{}}`,
		"query not string":  `{"query":1}`,
		"two queries":       `{"query":"mutation { a { b } }","query":"mutation { a { b } }"}`,
		"trailing data":     `{"query":"mutation { a { b } }"} {}`,
		"syntax error":      `{"query":"mutation { a( }"}`,
		"a query":           `{"query":"query { shop { name } }"}`,
		"two operations":    `{"query":"mutation A { a { b } } mutation B { c { d } }"}`,
		"two fields":        `{"query":"mutation { a { b } c { d } }"}`,
		"variable key":      `{"query":"mutation($k: String!) { a @idempotent(key: $k) { b } }","variables":{"k":"x"}}`,
		"key not a string":  `{"query":"mutation { a @idempotent(key: 7) { b } }"}`,
		"directive no key":  `{"query":"mutation { a @idempotent { b } }"}`,
		"not UTF-8":         "{\"query\":\"mutation { a { b } } \xff\"}",
		"empty body":        ``,
		"fragment spread":   `{"query":"mutation { ...F } fragment F on Mutation { a { b } }"}`,
		"anonymous query {": `{"query":"{ shop { name } }"}`,
	}
	for name, body := range bad {
		_, _, _, err := SplitGraphQLKey([]byte(body))
		if !errors.Is(err, ErrNoKeyPlace) {
			t.Errorf("%s: SplitGraphQLKey = %v, want ErrNoKeyPlace", name, err)
		}
		var ke *GraphQLKeyError
		if err != nil && !errors.As(err, &ke) {
			t.Errorf("%s: %v is not a *GraphQLKeyError", name, err)
		}
		if name == "variable key" || name == "key not a string" || name == "directive no key" {
			continue // PlaceGraphQLKey refuses those as carrying a directive already
		}
		if _, err := PlaceGraphQLKey([]byte(body), "k"); !errors.Is(err, ErrNoKeyPlace) {
			t.Errorf("%s: PlaceGraphQLKey = %v, want ErrNoKeyPlace", name, err)
		}
	}
}
