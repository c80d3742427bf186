package testserver

import (
	"net/http"
	"time"
)

// Stripe API v2 (the /v2 namespace), from
// https://docs.stripe.com/api-v2-overview. Every rule cites its page; what
// no page states is marked "chosen" and is never kinder to the client than
// Stripe would be. The v1 pages scope their replay rules to v1 themselves:
// "The idempotency and response replay guidance applies to API v1. For API
// v2, see API v2 idempotency, which uses different replay behavior and a
// 30-day window." (https://docs.stripe.com/error-low-level)
//
// Left out, because no Stripe page confirms it for v2: a replay marker
// (Idempotent-Replayed is a v1 header); Stripe-Should-Retry; echoing the
// key on answers; the status, type and code Stripe gives a key reused with
// other parameters and a request still in progress (the answers below are
// chosen, and say so); the error returned "in the rare event that it's no
// longer possible for an idempotent replay to succeed"; requiring the
// Stripe-Version header ("All API requests to the API /v2 namespace must
// include the Stripe-Version header"), which this simulator does not check,
// so that any client of the reference API can talk to it; keys on DELETE
// ("All POST and DELETE API v2 requests accept idempotency keys"): the
// reference API guards its POST and PATCH routes only. The routes are the
// reference API's /v1/payments and /v1/payouts, the same in every dialect.
//
// Partly failed work: Stripe documents that "If the first request failed
// (or partially failed), the API re-executes the failed requests and
// returns the new response". The reference API commits each effect in one
// step with its key's answer, so a request either left nothing done or
// finished; a failed one is executed again (Store5xx false), a finished one
// is answered from the store. A request that did half its work cannot
// happen here, so no test claims to show Stripe finishing one.
const (
	// https://docs.stripe.com/api/idempotent_requests (the page that sets
	// v1 and v2 side by side): "Idempotency keys are up to 255 characters
	// long."
	stripeV2MaxKeyLength = 255
	// https://docs.stripe.com/api-v2-overview#idempotency: two requests
	// are idempotent when they "occur within 30 days of each other".
	stripeV2Retention = 30 * 24 * time.Hour
)

// stripeV2Error is the error document of the v2 simulator,
// {"error":{"type","code","message"}}. No Stripe page shows a v2 error
// body; Stripe's own SDK reads one from the "error" member with the v1
// fields plus user_message (stripe-node's RequestSender passes
// jsonResponse.error to generateV2Error, which maps type
// "idempotency_error" as for v1,
// https://github.com/stripe/stripe-node/blob/master/src/Error.ts).
type stripeV2Error struct {
	Error stripeV2ErrorBody `json:"error"`
}

type stripeV2ErrorBody struct {
	Type    string `json:"type"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

func stripeV2Dialect() Dialect {
	return Dialect{
		Name: "stripe-v2",
		// https://docs.stripe.com/api-v2-overview#idempotency: "To specify
		// an idempotency key, use the Idempotency-Key header".
		KeyHeader:    KeyHeader,
		MaxKeyLength: stripeV2MaxKeyLength,
		// Same page: "If no key is provided, Stripe automatically generates
		// a UUID for you": a keyless request runs, and a resend of it runs
		// again (the client never learns the key).
		RequireKey: false,
		Retention:  stripeV2Retention,
		// Same page: "If the first request failed (or partially failed),
		// the API re-executes the failed requests and returns the new
		// response": a 5xx is never saved and replayed, unlike v1.
		Store5xx: false,
		// https://docs.stripe.com/api-v2-overview: "Request and responses
		// use JSON encoding (application/json)"; form bodies are v1's.
		formBodies: false,
		// Chosen: no page says what a key that is too long gets; a 400
		// invalid_request_error is Stripe's type for bad parameters
		// (https://docs.stripe.com/api/errors).
		invalidKey: func(w http.ResponseWriter, err error) {
			writeJSONError(w, http.StatusBadRequest, stripeV2Error{stripeV2ErrorBody{
				Type: stripeInvalidRequestError, Message: "Invalid Idempotency-Key: " + err.Error(),
			}})
		},
		// Unreachable: a missing key runs unguarded (RequireKey false).
		missingKey: func(w http.ResponseWriter, _ error) {
			writeJSONError(w, http.StatusBadRequest, stripeV2Error{stripeV2ErrorBody{
				Type: stripeInvalidRequestError, Message: "Missing Idempotency-Key.",
			}})
		},
		inProgress: stripeV2InProgress,
		// Chosen status and message. The v2 page says a retry is a request
		// with "the same idempotency key for the same API"; the page that
		// sets v1 and v2 side by side says "The idempotency layer compares
		// incoming parameters to those of the original request and errors
		// if they're not the same" (https://docs.stripe.com/api/idempotent_requests),
		// and idempotency_error is the type for a key "re-used on a request
		// that does not match the first request's API endpoint and
		// parameters" (https://docs.stripe.com/api/errors), which Stripe's
		// SDK raises for v2 answers too (Error.ts, above). The status is
		// v1's 400, as captured from Stripe (dialect_stripe.go); no page
		// gives v2's.
		keyReused: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusBadRequest, stripeV2Error{stripeV2ErrorBody{
				Type: stripeIdempotencyError,
				Message: "Keys for idempotent requests can only be used with the same parameters they were first used with. " +
					"Try using a key other than this one if you meant to execute a different request.",
			}})
		},
		// Chosen: no page covers the store being down; api_error is
		// Stripe's type for "a temporary problem with Stripe's servers"
		// (https://docs.stripe.com/api/errors). Nothing ran: retry.
		storeUnavailable: func(w http.ResponseWriter) {
			writeJSONError(w, http.StatusServiceUnavailable, stripeV2Error{stripeV2ErrorBody{
				Type: stripeAPIError, Message: "Stripe's idempotency store is unavailable; nothing was executed. Retry with the same key.",
			}})
		},
		// No replay marker is documented for v2. A retry of a finished
		// request gets its answer again: "If the first request succeeded,
		// the API skips making new changes and returns an updated
		// response" (https://docs.stripe.com/api-v2-overview#idempotency);
		// a payment of the reference API never changes once made, so its
		// stored answer is the up-to-date one.
		replayed:  noReplayMarker,
		problemAs: stripeV2Problem,
	}
}

// stripeV2InProgress answers a duplicate of a request still running. The
// v2 page says nothing of concurrent duplicates; chosen from Stripe's
// API-wide documents: "409 Conflict — The request conflicts with another
// request (perhaps due to using the same idempotent key)"
// (https://docs.stripe.com/api/errors) and idempotency_key_in_use, "The
// idempotency key provided is currently being used in another request"
// (https://docs.stripe.com/error-codes). Not saved: a retry after the
// original finishes gets the original's answer.
func stripeV2InProgress(w http.ResponseWriter, _ time.Duration) {
	writeJSONError(w, http.StatusConflict, stripeV2Error{stripeV2ErrorBody{
		Type: stripeInvalidRequestError, Code: "idempotency_key_in_use",
		Message: "There is currently another in-progress request using this idempotency key. Please try again later.",
	}})
}

// stripeV2Problem is the v2 error document of one of the reference API's
// problems, with the API-wide types of https://docs.stripe.com/api/errors:
// api_error for a 5xx, invalid_request_error for a 4xx, code
// resource_missing for a 404 and idempotency_key_in_use for a 409 (a
// request whose hold on its key ended before its effect committed:
// nothing ran, retry with the key).
func stripeV2Problem(status int, p Problem) any {
	body := stripeV2ErrorBody{Type: stripeInvalidRequestError, Message: p.Detail}
	if body.Message == "" {
		body.Message = p.Title
	}
	switch {
	case status >= 500:
		body.Type = stripeAPIError
	case status == http.StatusNotFound:
		body.Code = "resource_missing"
	case status == http.StatusConflict:
		body.Code = "idempotency_key_in_use"
	}
	return stripeV2Error{body}
}
