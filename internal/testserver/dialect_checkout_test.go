package testserver_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// uuidPattern is the form of a Cko-Request-Id.
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// checkoutCase is Checkout.com's row of dialectCases.
var checkoutCase = dialectCase{
	name: "checkout", header: "Cko-Idempotency-Key", replayStatus: http.StatusCreated, maxKey: 36,
	checkReplay: noReplayHeader,
	// The page compares nothing but the key: the first answer comes back.
	checkReused: func(t *testing.T, r, first answer) {
		assert.Equal(t, http.StatusCreated, r.status)
		assert.Equal(t, first.body, r.body)
	},
	// 409 "Conflict with another request being processed", no body and no
	// Retry-After documented.
	checkInProgress: func(t *testing.T, r answer) {
		assert.Equal(t, http.StatusConflict, r.status, r.body)
		assert.Empty(t, r.body)
		assert.Empty(t, r.header.Get("Retry-After"))
		assert.Regexp(t, uuidPattern, r.header.Get("Cko-Request-Id"))
	},
	checkTooLong: func(t *testing.T, r answer) {
		e := r.json(t, http.StatusUnprocessableEntity)
		assert.Equal(t, "request_invalid", e["error_type"])
		assert.Equal(t, []any{"cko_idempotency_key_invalid"}, e["error_codes"])
		assert.Equal(t, r.header.Get("Cko-Request-Id"), e["request_id"])
	},
}

func startCheckout(t *testing.T) *dialectServer {
	t.Helper()
	return startDialect(t, checkoutCase)
}

func TestCheckout_EveryAnswerHasItsOwnRequestID(t *testing.T) {
	t.Parallel()
	s := startCheckout(t)
	first := s.pay(t, "cko-1", 1000)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	replay := s.pay(t, "cko-1", 1000)
	require.Equal(t, http.StatusCreated, replay.status, replay.body)
	assert.Equal(t, first.body, replay.body)
	a, b := first.header.Get("Cko-Request-Id"), replay.header.Get("Cko-Request-Id")
	assert.Regexp(t, uuidPattern, a)
	assert.Regexp(t, uuidPattern, b)
	assert.NotEqual(t, a, b, "the request id names the request, not the key")
	assert.Contains(t, first.body, `"id":"pay_`)
	assert.Contains(t, first.body, `"currency":"EUR"`)
}

func TestCheckout_ValidationErrorIsNotKept(t *testing.T) {
	t.Parallel()
	s := startCheckout(t)
	bad := s.pay(t, "cko-bad", 0)
	e := bad.json(t, http.StatusUnprocessableEntity)
	assert.Equal(t, "request_invalid", e["error_type"])
	assert.Equal(t, []any{"amount_invalid"}, e["error_codes"])
	assert.Equal(t, bad.header.Get("Cko-Request-Id"), e["request_id"])
	assert.Zero(t, s.payments(t))

	// "If the original request returns a 4xx ... no idempotent result is
	// saved and the payment is reattempted."
	good := s.pay(t, "cko-bad", 1000)
	assert.Equal(t, http.StatusCreated, good.status, good.body)
	assert.Equal(t, 1, s.payments(t))
}

func TestCheckout_ErrorsWithoutBody(t *testing.T) {
	t.Parallel()
	s := startCheckout(t)
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/payments", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "not a bearer token")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, int64(0), resp.ContentLength, "401 is documented without a body")
	assert.Regexp(t, uuidPattern, resp.Header.Get("Cko-Request-Id"))
}

func TestCheckout_AdminKeepsItsProblems(t *testing.T) {
	t.Parallel()
	s := startDialect(t, checkoutCase, testserver.WithAdminToken("tok"))
	resp, err := http.Get(s.url + "/admin/faults")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	assert.Empty(t, resp.Header.Get("Cko-Request-Id"), "the admin API is not Checkout.com's")
}

// POST /payments answers Checkout.com's payment document, and takes its
// source member; GET shows the same document.
func TestCheckout_PaymentDocument(t *testing.T) {
	t.Parallel()
	s := startCheckout(t)
	created := s.payBody(t, "74f18c1e-e797-4794-9cc5-f0bd4d771e93",
		`{"source":{"type":"token","token":"tok_4gzeau5o2uqubbk6fufs3m7p54"},"amount":6500,"currency":"USD","reference":"ORD-5023-4E89"}`)
	doc := created.json(t, http.StatusCreated)
	id, _ := doc["id"].(string)
	require.Regexp(t, `^pay_[a-z2-7]{24}$`, id)
	assert.Equal(t, "act_"+strings.TrimPrefix(id, "pay_"), doc["action_id"])
	assert.EqualValues(t, 6500, doc["amount"])
	assert.Equal(t, "USD", doc["currency"])
	assert.Equal(t, true, doc["approved"])
	assert.Equal(t, "Authorized", doc["status"])
	assert.Equal(t, "10000", doc["response_code"])
	assert.Equal(t, "Approved", doc["response_summary"])
	assert.Equal(t, "ORD-5023-4E89", doc["reference"])
	assert.NotEmpty(t, doc["processed_on"])

	got, err := http.Get(s.url + "/v1/payments/" + id)
	require.NoError(t, err)
	gb, err := io.ReadAll(got.Body)
	got.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, got.StatusCode)
	assert.JSONEq(t, created.body, string(gb))

	// A source that is not an object is Checkout.com's validation error.
	bad := s.payBody(t, "cko-src", `{"source":"tok_x","amount":100,"currency":"USD"}`)
	e := bad.json(t, http.StatusUnprocessableEntity)
	assert.Equal(t, []any{"source_invalid"}, e["error_codes"])
}

// payBody posts body under the Cko-Idempotency-Key key.
func (s *dialectServer) payBody(t *testing.T, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+"/v1/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cko-Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
