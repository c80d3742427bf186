package testserver

import (
	"net/http"
	"time"

	"github.com/idemkit/idem/server"
)

// Shopify's Admin GraphQL API, from its published documentation, for the
// mutation whose idempotency answers Shopify documents:
// inventoryAdjustQuantities ("As of version 2026-04, the idempotency key
// is required and must be provided using the @idempotent directive",
// https://shopify.dev/docs/api/admin-graphql/2026-01/objects/InventoryAdjustQuantitiesUserError).
// The endpoint is POST /admin/api/2026-04/graphql.json; the key travels in
// the directive (shopifySplitKey). What no page states is marked "chosen".
//
// Left out, because no Shopify page read here confirms it: refundCreate
// (its payload's UserError has no code, so how it reports an idempotency
// error is not documented,
// https://shopify.dev/docs/api/admin-graphql/latest/payloads/RefundCreatePayload);
// the key's retention (the server's own applies) and length limit; a
// replay marker; the shape of the runtime error for a missing directive;
// the HTTP status of a throttled answer (this server does not throttle);
// IDEMPOTENCY_PREVIOUS_ATTEMPT_FAILED, whose conditions no page states;
// the changeFromQuantity field's being required in 2026-04 (it is
// optional here); the lists of valid reasons and quantity names.
const (
	// routeShopifyGraphQL is the Admin API's GraphQL endpoint for the
	// version that made the directive mandatory: "POST
	// https://{shop}.myshopify.com/admin/api/{api_version}/graphql.json"
	// form (https://shopify.dev/docs/api/admin-graphql).
	routeShopifyGraphQL = "/admin/api/2026-04/graphql.json"
	// shopifyAdjustField is the mutation the endpoint serves.
	shopifyAdjustField = "inventoryAdjustQuantities"
)

// shopifyUserError is one InventoryAdjustQuantitiesUserError: "code ...
// field ... message"
// (https://shopify.dev/docs/api/admin-graphql/2026-01/objects/InventoryAdjustQuantitiesUserError).
type shopifyUserError struct {
	Code    string   `json:"code"`
	Field   []string `json:"field"`
	Message string   `json:"message"`
}

// shopifyGraphQLError is one top-level GraphQL error.
type shopifyGraphQLError struct {
	Message string `json:"message"`
}

// writeShopifyUserError answers the mutation's payload with one user
// error and no adjustment group, 200 as GraphQL answers are.
func writeShopifyUserError(w http.ResponseWriter, code, message string) {
	writeJSONError(w, http.StatusOK, map[string]any{"data": map[string]any{shopifyAdjustField: map[string]any{
		"inventoryAdjustmentGroup": nil,
		"userErrors":               []shopifyUserError{{Code: code, Message: message}},
	}}})
}

// writeShopifyErrors answers top-level GraphQL errors and no data.
func writeShopifyErrors(w http.ResponseWriter, status int, messages ...string) {
	errs := make([]shopifyGraphQLError, len(messages))
	for i, m := range messages {
		errs[i] = shopifyGraphQLError{Message: m}
	}
	writeJSONError(w, status, map[string]any{"errors": errs})
}

func shopifyDialect() Dialect {
	return Dialect{
		Name:     "shopify",
		splitKey: shopifySplitKey,
		// Chosen: no page states a limit (shopifySplitKey applies the
		// server's own).
		MaxKeyLength: server.MaxKeyLength,
		// "mandatory for the following mutations in version 2026-04"
		// (https://shopify.dev/changelog/making-idempotency-mandatory-for-inventory-adjustments-and-refund-mutations).
		RequireKey:   true,
		graphQLRoute: routeShopifyGraphQL,
		// "you should include your token as a X-Shopify-Access-Token
		// header on all GraphQL requests" (https://shopify.dev/docs/api/admin-graphql):
		// keys and adjustments are scoped by it.
		tokenHeader: "X-Shopify-Access-Token",
		// "calling these mutations without an idempotency directive will
		// result in an error at runtime" (same page). Chosen: the error's
		// shape is not documented; a GraphQL error, no data, 200.
		missingKey: func(w http.ResponseWriter, _ error) {
			writeShopifyErrors(w, http.StatusOK, "The @idempotent directive is required for this mutation as of API version 2026-04.")
		},
		// A body that is not a GraphQL request: "400 Bad Request: The
		// request wasn't understood by the server, generally due to bad
		// syntax" (https://shopify.dev/docs/api/usage/response-codes).
		// Chosen: a key that is empty, too long or not a string is a
		// GraphQL error, no data, 200.
		invalidKey: func(w http.ResponseWriter, err error) {
			switch server.ProblemOf(err) {
			case server.BodyNotObject, server.BodyNotUTF8:
				writeShopifyErrors(w, http.StatusBadRequest, err.Error())
			default:
				writeShopifyErrors(w, http.StatusOK, err.Error())
			}
		},
		// IDEMPOTENCY_CONCURRENT_REQUEST: "This request is currently in
		// progress, please try again."
		// (https://shopify.dev/docs/api/admin-graphql/2026-01/enums/InventoryAdjustQuantitiesUserErrorCode),
		// a user error of the mutation's payload. Chosen: no Retry-After.
		inProgress: func(w http.ResponseWriter, _ time.Duration) {
			writeShopifyUserError(w, "IDEMPOTENCY_CONCURRENT_REQUEST", "This request is currently in progress, please try again.")
		},
		// IDEMPOTENCY_KEY_PARAMETER_MISMATCH: "The same idempotency key
		// cannot be used with different operation parameters." (same page).
		keyReused: func(w http.ResponseWriter) {
			writeShopifyUserError(w, "IDEMPOTENCY_KEY_PARAMETER_MISMATCH", "The same idempotency key cannot be used with different operation parameters.")
		},
		// Chosen: no page covers the store being down; 503, as the
		// response-codes page lists "503 Service Unavailable".
		storeUnavailable: server.WriteStoreUnavailable,
		// "It will return the result of the original operation instead of
		// creating a new one"
		// (https://shopify.dev/changelog/adding-idempotency-for-inventory-adjustments-and-refund-mutations),
		// with no documented marker.
		replayed: noReplayMarker,
		// Chosen: the API's other errors (its 404, 405, 413, injected
		// faults) as GraphQL errors with the problem's status.
		problemAs: func(_ int, p Problem) any {
			msg := p.Title
			if p.Detail != "" {
				msg = p.Detail
			}
			return map[string]any{"errors": []shopifyGraphQLError{{Message: msg}}}
		},
	}
}
