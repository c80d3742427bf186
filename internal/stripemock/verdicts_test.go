package stripemock_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
)

// Creates as stripe-go sends them, each answered 200 by stripe-mock with
// the object its OpenAPI fixtures describe: idem stores the answer
// (Succeeded, one attempt), the key it sent comes back in stripe-mock's
// echo of Idempotency-Key (server.go reflects the header it received), and
// a second Do replays the stored object locally without a request.
func TestStripeMock_CreatesSucceedAndAreStored(t *testing.T) {
	mock := startStripeMock(t)
	c := stripeClient(t)
	cases := []struct {
		name, path, object, idPrefix string
		form                         url.Values
		amount                       int64
	}{
		{"payment intent", "/v1/payment_intents", "payment_intent", "pi_",
			url.Values{"amount": {"2000"}, "currency": {"usd"}, "payment_method_types[]": {"card"},
				"metadata[order]": {"order-7"}}, 2000},
		{"charge", "/v1/charges", "charge", "ch_",
			url.Values{"amount": {"1500"}, "currency": {"usd"}, "source": {"tok_visa"}}, 1500},
		{"customer", "/v1/customers", "customer", "cus_",
			url.Values{"email": {"payer@example.com"}, "metadata[crm]": {"c-42"}}, 0},
		{"refund", "/v1/refunds", "refund", "re_",
			url.Values{"charge": {"ch_123"}, "amount": {"500"}}, 500},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := mock.requests(t, http.MethodPost, tc.path)
			in, err := c.Begin(context.Background(), "stripemock/"+tc.name, formRequest(t, mock.URL, tc.path, tc.form))
			require.NoError(t, err)
			resp, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			obj, body := readObject(t, resp)
			assert.Equal(t, tc.object, obj.Object, body)
			assert.True(t, strings.HasPrefix(obj.ID, tc.idPrefix), body)
			assert.Equal(t, tc.amount, obj.Amount, "stripe-mock reflects the form's amount: %s", body)
			assert.Equal(t, in.Key, resp.Header.Get("Idempotency-Key"), "stripe-mock echoes the key idem sent")
			assert.False(t, idem.IsReplay(resp), "stripe-mock never sends Idempotent-Replayed")
			assert.Equal(t, idem.Succeeded, in.State)
			assert.Equal(t, 1, in.Attempts)
			assert.False(t, in.MayHaveExecuted)

			again, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			assert.True(t, idem.IsLocalReplay(again))
			replayed, _ := readObject(t, again)
			assert.Equal(t, obj.ID, replayed.ID, "the stored object, not a new one")
			assert.Equal(t, before+1, mock.requests(t, http.MethodPost, tc.path), "one request; the replay sent nothing")
		})
	}
}

// stripe-mock's error envelopes, {"error":{"type":"invalid_request_error",
// "message":...}} with 400 (a parameter its OpenAPI schema refuses, a body
// it cannot parse, a media type other than the form), 404 (a URL it does
// not know) or 401 (no credentials): dialect.Stripe() judges each Refused
// (Stripe's 4xx, which say nothing of an earlier attempt), and on an intent
// nothing was sent of before that is a final failure: Failed, stored, one
// attempt, never resent.
func TestStripeMock_ErrorEnvelopesAreFinalFailures(t *testing.T) {
	mock := startStripeMock(t)
	c := stripeClient(t)
	cases := []struct {
		name, path string
		req        func(t *testing.T) *http.Request
		status     int
		message    string
	}{
		{"missing amount", "/v1/payment_intents", func(t *testing.T) *http.Request {
			return formRequest(t, mock.URL, "/v1/payment_intents", url.Values{"currency": {"usd"}})
		}, http.StatusBadRequest, "'amount' is required"},
		{"amount not a number", "/v1/payment_intents", func(t *testing.T) *http.Request {
			return formRequest(t, mock.URL, "/v1/payment_intents", url.Values{"amount": {"twenty"}, "currency": {"usd"}})
		}, http.StatusBadRequest, "value is not numeric"},
		{"unknown parameter", "/v1/payment_intents", func(t *testing.T) *http.Request {
			return formRequest(t, mock.URL, "/v1/payment_intents",
				url.Values{"amount": {"2000"}, "currency": {"usd"}, "tip": {"5"}})
		}, http.StatusBadRequest, "additional properties are not allowed"},
		{"unknown resource", "/v1/payment_intentions", func(t *testing.T) *http.Request {
			return formRequest(t, mock.URL, "/v1/payment_intentions", url.Values{"amount": {"2000"}, "currency": {"usd"}})
		}, http.StatusNotFound, "Unrecognized request URL"},
		{"JSON body", "/v1/refunds", func(t *testing.T) *http.Request {
			return postRequest(t, mock.URL+"/v1/refunds", "application/json", `{"charge":"ch_123","amount":500}`)
		}, http.StatusBadRequest, "Expected: `application/x-www-form-urlencoded`"},
		{"no credentials", "/v1/customers", func(t *testing.T) *http.Request {
			req := formRequest(t, mock.URL, "/v1/customers", url.Values{"email": {"payer@example.com"}})
			req.Header.Del("Authorization")
			return req
		}, http.StatusUnauthorized, "Please authenticate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := mock.requests(t, http.MethodPost, tc.path)
			in, err := c.Begin(context.Background(), "stripemock/"+tc.name, tc.req(t))
			require.NoError(t, err)
			resp, err := c.Do(context.Background(), in)
			require.ErrorIs(t, err, idem.ErrFinalFailure)
			assert.NotErrorIs(t, err, idem.ErrOutcomeUnknown)
			var give *idem.GiveUpError
			require.True(t, errors.As(err, &give))
			assert.Equal(t, tc.status, give.LastStatus)
			require.NotNil(t, resp, "Do returns the final answer with the error")
			require.Equal(t, tc.status, resp.StatusCode)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			var envelope stripeObject
			require.NoError(t, json.Unmarshal(b, &envelope), string(b))
			require.NotNil(t, envelope.Error, string(b))
			assert.Equal(t, "invalid_request_error", envelope.Error.Type)
			assert.Contains(t, envelope.Error.Message, tc.message)
			verdict := dialect.Stripe().Classify(dialect.Answer{Method: http.MethodPost, Status: resp.StatusCode, Header: resp.Header, Body: b})
			assert.Equal(t, dialect.Refused, verdict, "dialect.Stripe() on stripe-mock's answer: %s", b)
			if tc.status == http.StatusUnauthorized {
				// validateAuth answers before the key is reflected.
				assert.Empty(t, resp.Header.Get("Idempotency-Key"))
			} else {
				assert.Equal(t, in.Key, resp.Header.Get("Idempotency-Key"), "stripe-mock echoes the key idem sent")
			}
			assert.Equal(t, idem.Failed, in.State)
			assert.Equal(t, 1, in.Attempts)
			assert.False(t, in.MayHaveExecuted)

			_, err = c.Do(context.Background(), in)
			require.ErrorIs(t, err, idem.ErrFinalFailure, "a Failed intent stays failed")
			assert.Equal(t, 1, in.Attempts)
			assert.Equal(t, before+1, mock.requests(t, http.MethodPost, tc.path), "one request, never resent")
		})
	}
}
