package testserver

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// checkoutPayment is a payment as Checkout.com's POST /payments answers it,
// from the response example of
// https://www.checkout.com/docs/payments/accept-payments/request-a-card-payment:
// {"id": "pay_mbabizu24mvu3mela5njyhpit4", "action_id":
// "act_mbabizu24mvu3mela5njyhpit4", "amount": 6500, "currency": "USD",
// "approved": true, "status": "Authorized", ..., "response_code": "10000",
// "response_summary": "Approved", ...}, and processed_on and reference as
// the 201 example of the API reference shows them ("processed_on":
// "2019-09-10T10:11:12Z", "reference": "ORD-5023-4E89", in the Postman
// collection of https://github.com/checkout/checkout-postman). The
// reference API's payments always go through, so every one is approved
// and Authorized. The example's card, customer, risk, 3DS and scheme
// members are left out (this server has no card), and so are _links,
// whose hrefs name Checkout.com's hosts.
type checkoutPayment struct {
	ID              string    `json:"id"`
	ActionID        string    `json:"action_id"`
	Amount          int64     `json:"amount"`
	Currency        string    `json:"currency"`
	Approved        bool      `json:"approved"`
	Status          string    `json:"status"`
	ResponseCode    string    `json:"response_code"`
	ResponseSummary string    `json:"response_summary"`
	ProcessedOn     time.Time `json:"processed_on"`
	Reference       string    `json:"reference,omitempty"`
}

// checkoutPaymentDoc shows p as Checkout.com does. The example's action id
// carries the payment id's random part after act_, and so does this one.
func checkoutPaymentDoc(p Payment) any {
	return checkoutPayment{
		ID:              p.ID,
		ActionID:        "act_" + strings.TrimPrefix(p.ID, paymentIDPrefix),
		Amount:          p.Amount,
		Currency:        p.Currency,
		Approved:        true,
		Status:          "Authorized",
		ResponseCode:    "10000",
		ResponseSummary: "Approved",
		ProcessedOn:     p.Created,
		Reference:       p.Reference,
	}
}

// checkoutObjectFields are the members of Checkout.com's payment request
// the reference API has no use for: source, "Details about the payment
// source" ({"type": "token", "token": "tok_…"} in the page's request
// example).
var checkoutObjectFields = []string{"source"}

// isJSONObject reports whether raw, a valid JSON value, is an object.
func isJSONObject(raw json.RawMessage) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) > 0 && trimmed[0] == '{'
}
