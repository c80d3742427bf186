package dialect

import (
	"encoding/json"
	"net/http"
)

// Pages the Shopify rules come from.
const (
	shopifyMandatoryURL   = "https://shopify.dev/changelog/making-idempotency-mandatory-for-inventory-adjustments-and-refund-mutations"
	shopifyAddedURL       = "https://shopify.dev/changelog/adding-idempotency-for-inventory-adjustments-and-refund-mutations"
	shopifyIdempotentURL  = "https://shopify.dev/docs/api/usage/idempotent-requests"
	shopifyImplementURL   = "https://shopify.dev/docs/api/usage/implementing-idempotency"
	shopifyAdjustCodesURL = "https://shopify.dev/docs/api/admin-graphql/2026-01/enums/InventoryAdjustQuantitiesUserErrorCode"
	shopifyAdjustErrorURL = "https://shopify.dev/docs/api/admin-graphql/2026-01/objects/InventoryAdjustQuantitiesUserError"
	shopifySetCodesURL    = "https://shopify.dev/docs/api/admin-graphql/latest/enums/InventorySetQuantitiesUserErrorCode"
	shopifyRefundURL      = "https://shopify.dev/docs/api/admin-graphql/latest/payloads/RefundCreatePayload"
	shopifyAdminURL       = "https://shopify.dev/docs/api/admin-graphql"
	shopifyRateLimitsURL  = "https://shopify.dev/docs/api/usage/rate-limits"
	shopifyThrottledURL   = "https://community.shopify.com/t/graphql-admin-api-example-throttled-requests-response/8456"
	graphQLSpecDataURL    = "https://spec.graphql.org/October2021/#sec-Data"
)

// The userErrors codes of Shopify's idempotent mutations, as
// InventoryAdjustQuantitiesUserErrorCode lists them
// (https://shopify.dev/docs/api/admin-graphql/2026-01/enums/InventoryAdjustQuantitiesUserErrorCode)
// and InventorySetQuantitiesUserErrorCode
// (https://shopify.dev/docs/api/admin-graphql/latest/enums/InventorySetQuantitiesUserErrorCode).
const (
	// "This request is currently in progress, please try again."
	ShopifyConcurrentRequest = "IDEMPOTENCY_CONCURRENT_REQUEST"
	// "The same idempotency key cannot be used with different operation
	// parameters."
	ShopifyKeyParameterMismatch = "IDEMPOTENCY_KEY_PARAMETER_MISMATCH"
	// "A previous request with this idempotency key failed. Retry with a
	// new idempotency key."
	ShopifyPreviousAttemptFailed = "IDEMPOTENCY_PREVIOUS_ATTEMPT_FAILED"
)

// Shopify is the dialect of Shopify's Admin GraphQL API for the mutations
// that take an @idempotent directive. The key travels inside the GraphQL
// document of the JSON body's query member, as a directive on the
// mutation's field:
//
//	mutation { inventoryAdjustQuantities(input: {…}) @idempotent(key: "…") { … } }
//
// "mandatory for the following mutations in version 2026-04" (refundCreate
// and inventoryAdjustQuantities among them) and "calling these mutations
// without an idempotency directive will result in an error at runtime"
// (https://shopify.dev/changelog/making-idempotency-mandatory-for-inventory-adjustments-and-refund-mutations).
// A client speaking it writes the directive into a body that has none
// (PlaceGraphQLKey) and keeps one the body already holds; the fingerprint
// is taken over the body without a key the client placed. Answers are
// judged from the body, since the API reports failures inside 200
// answers; Classify sees its first BodyPeek bytes (64 KiB), so a larger
// answer cannot be read whole and is Unresolvable: select few fields.
//
// Not confirmed from a Shopify page, so left out: a limit on the key's
// length (MaxKeyLength is Draft's 255, the client's own keys are 36
// characters); the retention window (the implementing-idempotency page
// says it documents one, but its text could not be read here, so the
// client's own retention applies); any replay marker; the shape of the
// runtime error for a missing directive; how refundCreate reports an
// idempotency error (its payload's UserError has no code field,
// https://shopify.dev/docs/api/admin-graphql/latest/payloads/RefundCreatePayload);
// and the HTTP status of a throttled answer (200 or 429: both are read
// the same way here).
func Shopify() Dialect {
	return Dialect{
		Name:     "shopify",
		PlaceKey: PlaceGraphQLKey,
		SplitKey: SplitGraphQLKey,
		// The directive sits on the mutation field, after its arguments:
		// "inventoryAdjustQuantities(input: {…}) @idempotent(key:
		// \"4f5b6ebf-143c-4da5-8d0f-fb8553bfd85d\") { … }"
		// (https://shopify.dev/changelog/making-idempotency-mandatory-for-inventory-adjustments-and-refund-mutations).
		// "While some mutations accept idempotency keys as arguments to
		// the mutation ... others use directives (the difference is
		// ultimately just syntax)" (https://shopify.dev/docs/api/usage/idempotent-requests).
		SuccessBodies: true,
		// Chosen: no page states a limit for the directive's key.
		MaxKeyLength: 255,
		// Not confirmed (see above): the client's own retention applies.
		Retention: 0,
		// "It will return the result of the original operation instead of
		// creating a new one"
		// (https://shopify.dev/changelog/adding-idempotency-for-inventory-adjustments-and-refund-mutations),
		// with no documented marker.
		ReplayHeader:    "",
		Classify:        shopifyClassify,
		OperationStatus: DraftOperationStatus,
		// "you should include your token as a X-Shopify-Access-Token
		// header on all GraphQL requests" (https://shopify.dev/docs/api/admin-graphql).
		SecretHeaders: []string{"X-Shopify-Access-Token"},
		Docs: []string{shopifyMandatoryURL, shopifyAddedURL, shopifyIdempotentURL, shopifyImplementURL,
			shopifyAdjustCodesURL, shopifyAdjustErrorURL, shopifySetCodesURL, shopifyRefundURL,
			shopifyAdminURL, shopifyRateLimitsURL, shopifyThrottledURL, graphQLSpecDataURL},
	}
}

// shopifyResponse is a GraphQL response: data, with the mutation's
// payload under its field's name, and top-level errors.
type shopifyResponse struct {
	// Data is absent when a request error stopped the request before
	// execution, null when an error during execution left no result.
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string `json:"message"`
		Extensions struct {
			Code string `json:"code"`
		} `json:"extensions"`
	} `json:"errors"`
}

// shopifyPayload is what a mutation payload says of its errors: "userErrors
// ... The list of errors that occurred from executing the mutation"
// (https://shopify.dev/docs/api/admin-graphql/latest/payloads/RefundCreatePayload),
// each with a code where the mutation's error type has one ("code ... The
// error code", https://shopify.dev/docs/api/admin-graphql/2026-01/objects/InventoryAdjustQuantitiesUserError).
type shopifyPayload struct {
	UserErrors []struct {
		Code string `json:"code"`
	} `json:"userErrors"`
}

// shopifyClassify judges an answer of the Admin GraphQL API from its body.
func shopifyClassify(a Answer) Verdict {
	if a.Status < 200 || a.Status > 299 {
		switch a.Status {
		case http.StatusTooManyRequests:
			return RetryNotExecuted
		case http.StatusConflict, http.StatusUnprocessableEntity:
			// Shopify documents no idempotency meaning for them; Draft's
			// in-progress and key-reused readings do not apply.
			return Refused
		}
		if shopifyThrottled(a.Body) {
			return RetryNotExecuted
		}
		// The rest is Draft: a 5xx RetryMaybeExecuted (the key makes the
		// resend safe), other 4xx Refused, a 3xx after a POST
		// Unresolvable.
		return DraftClassify(a)
	}
	var doc shopifyResponse
	if json.Unmarshal(a.Body, &doc) != nil {
		// An answer cut at BodyPeek, or no GraphQL response at all: the
		// mutation may have run, and the replay would read the same.
		return Unresolvable
	}
	if len(doc.Errors) > 0 {
		return shopifyErrors(doc)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(doc.Data, &fields) != nil || len(fields) != 1 {
		return Unresolvable // not the answer to one mutation field
	}
	var payload shopifyPayload
	for _, raw := range fields {
		if string(raw) == "null" || json.Unmarshal(raw, &payload) != nil {
			return Unresolvable
		}
	}
	if len(payload.UserErrors) == 0 {
		return Success
	}
	for _, e := range payload.UserErrors {
		switch e.Code {
		// IDEMPOTENCY_CONCURRENT_REQUEST: "This request is currently in
		// progress, please try again."
		// (https://shopify.dev/docs/api/admin-graphql/2026-01/enums/InventoryAdjustQuantitiesUserErrorCode)
		case ShopifyConcurrentRequest:
			return InProgress
		// IDEMPOTENCY_KEY_PARAMETER_MISMATCH: "The same idempotency key
		// cannot be used with different operation parameters." (same
		// page). After an attempt that may have run, the client leaves
		// the intent unsettled, as for every KeyReused.
		case ShopifyKeyParameterMismatch:
			return KeyReused
		}
	}
	// IDEMPOTENCY_PREVIOUS_ATTEMPT_FAILED ("A previous request with this
	// idempotency key failed. Retry with a new idempotency key.",
	// https://shopify.dev/docs/api/admin-graphql/latest/enums/InventorySetQuantitiesUserErrorCode)
	// and every business error: a refusal that proves nothing of an
	// earlier attempt. Final when nothing was sent before; otherwise the
	// intent stays unsettled for a reconciliation.
	return Refused
}

// shopifyErrors judges a response with top-level errors.
func shopifyErrors(doc shopifyResponse) Verdict {
	for _, e := range doc.Errors {
		switch {
		// "All requests that are made after the limit has been exceeded
		// are throttled and an {errors: [{ message: "Throttled" }]} error
		// is returned" (Shopify's rate-limit page, as quoted in
		// https://community.shopify.com/t/graphql-admin-api-example-throttled-requests-response/8456,
		// where the answer carries extensions.code THROTTLED). A throttled
		// request never ran.
		case e.Extensions.Code == "THROTTLED", e.Message == "Throttled":
			return RetryNotExecuted
		}
	}
	if len(doc.Data) == 0 {
		// "If an error was raised before execution begins, the data entry
		// should not be present in the result"
		// (https://spec.graphql.org/October2021/#sec-Data): a request
		// error (syntax, validation, access, the missing directive). A
		// refusal that proves nothing of an earlier attempt.
		return Refused
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(doc.Data, &fields) // null or not an object: no result
	for _, raw := range fields {
		if string(raw) != "null" {
			// The mutation answered, and something failed too: it may
			// have run, and resending replays the same.
			return Unresolvable
		}
	}
	// "If an error was raised during the execution that prevented a
	// valid response, the data entry in the response should be null"
	// (https://spec.graphql.org/October2021/#sec-Data): the mutation may
	// have run (an internal error, say); the key makes a resend safe.
	return RetryMaybeExecuted
}

// shopifyThrottled reports whether a non-2xx body is a throttled answer.
func shopifyThrottled(body []byte) bool {
	var doc shopifyResponse
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	for _, e := range doc.Errors {
		if e.Extensions.Code == "THROTTLED" || e.Message == "Throttled" {
			return true
		}
	}
	return false
}
