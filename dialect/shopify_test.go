package dialect

import (
	"net/http"
	"testing"
)

// shopifyAnswer is a Shopify answer: status and JSON body, shown to
// Classify whatever the status (the dialect asks for 2xx bodies).
func shopifyAnswer(status int, body string) Answer {
	h := http.Header{"Content-Type": {"application/json"}}
	return Answer{Method: http.MethodPost, Status: status, Header: h, Body: []byte(body)}
}

// Shopify answers as its pages show them.
const (
	shopifyAdjusted     = `{"data":{"inventoryAdjustQuantities":{"inventoryAdjustmentGroup":{"id":"gid://shopify/InventoryAdjustmentGroup/1"},"userErrors":[]}},"extensions":{"cost":{"requestedQueryCost":10}}}`
	shopifyConcurrent   = `{"data":{"inventoryAdjustQuantities":{"inventoryAdjustmentGroup":null,"userErrors":[{"field":null,"code":"IDEMPOTENCY_CONCURRENT_REQUEST","message":"This request is currently in progress, please try again."}]}}}`
	shopifyMismatch     = `{"data":{"inventoryAdjustQuantities":{"inventoryAdjustmentGroup":null,"userErrors":[{"field":null,"code":"IDEMPOTENCY_KEY_PARAMETER_MISMATCH","message":"The same idempotency key cannot be used with different operation parameters."}]}}}`
	shopifyPrevFailed   = `{"data":{"inventorySetQuantities":{"inventoryAdjustmentGroup":null,"userErrors":[{"field":null,"code":"IDEMPOTENCY_PREVIOUS_ATTEMPT_FAILED","message":"A previous request with this idempotency key failed."}]}}}`
	shopifyBusiness     = `{"data":{"inventoryAdjustQuantities":{"inventoryAdjustmentGroup":null,"userErrors":[{"field":["input","changes","0","inventoryItemId"],"code":"INVALID_INVENTORY_ITEM","message":"The specified inventory item could not be found."}]}}}`
	shopifyRefundErr    = `{"data":{"refundCreate":{"refund":null,"userErrors":[{"field":["orderId"],"message":"Order does not exist"}]}}}`
	shopifyThrottledDoc = `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}],"extensions":{"cost":{"requestedQueryCost":70,"actualQueryCost":null}}}`
	shopifyOldThrottl   = `{"errors":[{"message":"Throttled"}],"extensions":{"cost":{"requestedQueryCost":202,"actualQueryCost":null}}}`
	shopifyInternal     = `{"data":null,"errors":[{"message":"Internal error. Looks like something went wrong on our end.","extensions":{"code":"INTERNAL_SERVER_ERROR"}}]}`
	shopifyFieldNull    = `{"data":{"refundCreate":null},"errors":[{"message":"Internal error.","path":["refundCreate"]}]}`
	shopifyPartial      = `{"data":{"refundCreate":{"refund":{"id":"gid://shopify/Refund/1"},"userErrors":[]}},"errors":[{"message":"field failed","path":["refundCreate","order"]}]}`
	shopifyNoData       = `{"errors":[{"message":"Field 'nope' doesn't exist on type 'Mutation'","extensions":{"code":"undefinedField"}}]}`
)

func TestShopifyFields(t *testing.T) {
	d := Shopify()
	if d.KeyHeader != "" || d.KeyField != "" || d.PlaceKey == nil || d.SplitKey == nil || !d.KeyInBody() {
		t.Errorf("key placement: header %q field %q place %v", d.KeyHeader, d.KeyField, d.PlaceKey != nil)
	}
	if !d.SuccessBodies {
		t.Error("SuccessBodies = false: a 200 with userErrors would be judged a success")
	}
	if d.Retention != 0 || d.ReplayHeader != "" {
		t.Errorf("Retention %s, ReplayHeader %q: neither is confirmed from a Shopify page", d.Retention, d.ReplayHeader)
	}
	if len(d.SecretHeaders) != 1 || d.SecretHeaders[0] != "X-Shopify-Access-Token" {
		t.Errorf("SecretHeaders = %v", d.SecretHeaders)
	}
	checkKeyLimit(t, d, 255)
}

func TestShopifyClassify(t *testing.T) {
	checkVerdicts(t, Shopify(), []verdictCase{
		{"200 adjusted", shopifyAnswer(200, shopifyAdjusted), Success},
		{"200 concurrent", shopifyAnswer(200, shopifyConcurrent), InProgress},
		{"200 mismatch", shopifyAnswer(200, shopifyMismatch), KeyReused},
		{"200 previous attempt failed", shopifyAnswer(200, shopifyPrevFailed), Refused},
		{"200 business userError", shopifyAnswer(200, shopifyBusiness), Refused},
		{"200 refund userError without code", shopifyAnswer(200, shopifyRefundErr), Refused},
		{"200 throttled", shopifyAnswer(200, shopifyThrottledDoc), RetryNotExecuted},
		{"200 throttled, message only", shopifyAnswer(200, shopifyOldThrottl), RetryNotExecuted},
		{"429 throttled", shopifyAnswer(429, shopifyThrottledDoc), RetryNotExecuted},
		{"429 empty", shopifyAnswer(429, ""), RetryNotExecuted},
		{"200 internal error, data null", shopifyAnswer(200, shopifyInternal), RetryMaybeExecuted},
		{"200 field null", shopifyAnswer(200, shopifyFieldNull), RetryMaybeExecuted},
		{"200 result and an error", shopifyAnswer(200, shopifyPartial), Unresolvable},
		{"200 request error, no data", shopifyAnswer(200, shopifyNoData), Refused},
		{"200 not JSON", shopifyAnswer(200, "<html>"), Unresolvable},
		{"200 empty", shopifyAnswer(200, ""), Unresolvable},
		{"200 two fields", shopifyAnswer(200, `{"data":{"a":{"userErrors":[]},"b":{"userErrors":[]}}}`), Unresolvable},
		{"200 data null, no errors", shopifyAnswer(200, `{"data":null}`), Unresolvable},
		{"500", shopifyAnswer(500, ""), RetryMaybeExecuted},
		{"503", shopifyAnswer(503, ""), RetryMaybeExecuted},
		{"409 not documented as in progress", shopifyAnswer(409, ""), Refused},
		{"422 not documented as key reuse", shopifyAnswer(422, ""), Refused},
		{"401", shopifyAnswer(401, `{"errors":"[API] Invalid API key or access token"}`), Refused},
		{"302 after a POST", shopifyAnswer(302, ""), Unresolvable},
	})
}

func TestValidateKeyPlacements(t *testing.T) {
	d := Shopify()
	d.SplitKey = nil
	if d.Validate() == nil {
		t.Error("PlaceKey without SplitKey: Validate = nil")
	}
	d = Shopify()
	d.KeyHeader = "Idempotency-Key"
	if d.Validate() == nil {
		t.Error("PlaceKey and KeyHeader: Validate = nil")
	}
	d = Shopify()
	d.QuotedKey = true
	if d.Validate() == nil {
		t.Error("PlaceKey with QuotedKey: Validate = nil")
	}
	d = Shopify()
	d.PlaceKey, d.SplitKey = nil, nil
	if d.Validate() == nil {
		t.Error("no key place: Validate = nil")
	}
}
