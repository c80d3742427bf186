package testserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

// The PayPal, Adyen and Square simulators answer every error of the API
// in the provider's own document, with the headers the provider's pages
// document and no others (the rules and their pages are in
// dialect_paypal.go, dialect_adyen.go and dialect_square.go).

func dialectCaseNamed(t *testing.T, name string) dialectCase {
	t.Helper()
	for _, c := range dialectCases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no %s dialect case", name)
	return dialectCase{}
}

// raw sends method path with body (JSON) and, for a header dialect, key.
func (s *dialectServer) raw(t *testing.T, method, path, body, key string) answer {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.url+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" && s.dc.header != "" {
		req.Header.Set(s.dc.header, key)
	}
	return send(t, req)
}

// paypalErrorOf checks a PayPal error document and returns it: name,
// message, a 13-character debug_id and an information_link.
func paypalErrorOf(t *testing.T, a answer, status int, name string) map[string]any {
	t.Helper()
	e := a.json(t, status)
	assert.Equal(t, name, e["name"], a.body)
	assert.NotEmpty(t, e["message"], a.body)
	assert.Regexp(t, `^[0-9a-f]{13}$`, e["debug_id"], a.body)
	link := firstDetail(t, e, "links")
	assert.Equal(t, "information_link", link["rel"], a.body)
	assert.True(t, strings.HasPrefix(link["href"].(string), "https://developer.paypal.com/api/orders/v2/#error-"), a.body)
	return e
}

func TestPayPalDialect_ErrorsArePayPalShaped(t *testing.T) {
	t.Parallel()
	s := startDialect(t, dialectCaseNamed(t, "paypal"))

	bad := paypalErrorOf(t, s.pay(t, "pp-bad", -1), http.StatusBadRequest, "INVALID_REQUEST")
	assert.Equal(t, "INVALID_PARAMETER_VALUE", firstDetail(t, bad, "details")["issue"])
	assert.Equal(t, "https://developer.paypal.com/api/orders/v2/#error-INVALID_PARAMETER_VALUE", firstDetail(t, bad, "links")["href"])

	long := paypalErrorOf(t, s.pay(t, strings.Repeat("p", 109), 1000), http.StatusBadRequest, "INVALID_REQUEST")
	issue := firstDetail(t, long, "details")
	assert.Equal(t, "INVALID_STRING_LENGTH", issue["issue"])
	assert.NotContains(t, issue, "location", "PayPal's locations are body, path and query only")
	assert.NotContains(t, issue, "field")

	missing := paypalErrorOf(t, s.raw(t, http.MethodGet, "/v1/payments/pay_nope", "", ""), http.StatusNotFound, "RESOURCE_NOT_FOUND")
	assert.NotContains(t, missing, "details")
	wrong := s.raw(t, http.MethodDelete, "/v1/payments", "", "")
	paypalErrorOf(t, wrong, http.StatusMethodNotAllowed, "METHOD_NOT_SUPPORTED")
	assert.NotEmpty(t, wrong.header.Get("Allow"))

	s.Faults().FailNext(1, http.StatusServiceUnavailable, time.Second)
	paypalErrorOf(t, s.pay(t, "pp-fault", 1000), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
	assert.Zero(t, s.payments(t))
}

// "You can retry idempotent calls that fail with ... HTTP 5xx status
// codes": PayPal's 500 is not the key's final answer, and a retry runs.
func TestPayPalDialect_Handler500IsNotFinal(t *testing.T) {
	t.Parallel()
	clock := &badYearClock{}
	s := startDialect(t, dialectCaseNamed(t, "paypal"), testserver.WithServerClock(clock.now))
	paypalErrorOf(t, s.pay(t, "pp-500", 1000), http.StatusInternalServerError, "INTERNAL_SERVER_ERROR")
	clock.fixed.Store(true)
	assert.Equal(t, http.StatusCreated, s.pay(t, "pp-500", 1000).status)
	assert.Equal(t, http.StatusOK, s.pay(t, "pp-500", 1000).status, "the repeat of a created payment is a 200")
	assert.Equal(t, 1, s.payments(t))
}

// adyenErrorOf checks an Adyen error document (status, message,
// errorType) and returns it.
func adyenErrorOf(t *testing.T, a answer, status int, errorType string) map[string]any {
	t.Helper()
	e := a.json(t, status)
	assert.EqualValues(t, status, e["status"], a.body)
	assert.NotEmpty(t, e["message"], a.body)
	assert.Equal(t, errorType, e["errorType"], a.body)
	assert.NotContains(t, e, "pspReference", "no payment was made")
	return e
}

func TestAdyenDialect_ErrorsAreAdyenShaped(t *testing.T) {
	t.Parallel()
	s := startDialect(t, dialectCaseNamed(t, "adyen"))

	bad := s.pay(t, "ad-bad", -1)
	e := adyenErrorOf(t, bad, http.StatusBadRequest, "validation")
	assert.NotContains(t, e, "errorCode", "no page maps this case to a code")
	assert.Empty(t, bad.header.Get("Idempotency-Key"), "the echo is documented on 2xx and 422 answers only")
	assert.Empty(t, bad.header.Get("Transient-Error"))

	adyenErrorOf(t, s.raw(t, http.MethodGet, "/v1/payments/pay_nope", "", ""), http.StatusNotFound, "validation")
	adyenErrorOf(t, s.raw(t, http.MethodDelete, "/v1/payments", "", ""), http.StatusMethodNotAllowed, "validation")

	// Nothing ran: "A subsequent request using the same idempotency key
	// will be processed as if it was the first request."
	s.Faults().FailNext(1, http.StatusServiceUnavailable, time.Second)
	fault := s.pay(t, "ad-fault", 1000)
	adyenErrorOf(t, fault, http.StatusServiceUnavailable, "internal")
	assert.Equal(t, "true", fault.header.Get("Transient-Error"))
	assert.Equal(t, http.StatusCreated, s.pay(t, "ad-fault", 1000).status)
	assert.Equal(t, 1, s.payments(t))
}

// A handler's 500 is not transient: Adyen stores it "as the final result
// for the idempotency key", so the retry gets it again, unmarked.
func TestAdyenDialect_Handler500IsStoredAndNotTransient(t *testing.T) {
	t.Parallel()
	clock := &badYearClock{}
	s := startDialect(t, dialectCaseNamed(t, "adyen"), testserver.WithServerClock(clock.now))
	failed := s.pay(t, "ad-500", 1000)
	adyenErrorOf(t, failed, http.StatusInternalServerError, "internal")
	assert.Empty(t, failed.header.Get("Transient-Error"))
	assert.Empty(t, failed.header.Get("Idempotency-Key"))

	clock.fixed.Store(true)
	again := s.pay(t, "ad-500", 1000)
	assert.Equal(t, http.StatusInternalServerError, again.status)
	assert.Equal(t, failed.body, again.body)
	assert.Empty(t, again.header.Get("Transient-Error"))
	assert.Zero(t, s.payments(t))
}

// The 422 error code 704 of a duplicate in progress carries the key back,
// as the 2xx answers do.
func TestAdyenDialect_InProgressEchoesTheKey(t *testing.T) {
	t.Parallel()
	s := startDialect(t, dialectCaseNamed(t, "adyen"))
	s.Faults().SetHandlerDelay(500 * time.Millisecond)
	done := make(chan answer, 1)
	go func() { done <- s.pay(t, "ad-dup", 1000) }()
	require.Eventually(t, func() bool { return s.Faults().Holding() == 1 }, 5*time.Second, 5*time.Millisecond)
	dup := s.pay(t, "ad-dup", 1000)
	assert.Equal(t, "704", adyenErrorOf(t, dup, http.StatusUnprocessableEntity, "validation")["errorCode"])
	assert.Equal(t, "true", dup.header.Get("Transient-Error"))
	assert.Equal(t, "ad-dup", dup.header.Get("Idempotency-Key"))
	first := <-done
	assert.Equal(t, http.StatusCreated, first.status)
	assert.Equal(t, "ad-dup", first.header.Get("Idempotency-Key"))
}

// squareErrorOf checks a one-error Square document and returns the error.
func squareErrorOf(t *testing.T, a answer, status int, category, code string) map[string]any {
	t.Helper()
	e := firstDetail(t, a.json(t, status), "errors")
	assert.Equal(t, category, e["category"], a.body)
	assert.Equal(t, code, e["code"], a.body)
	return e
}

func TestSquareDialect_ErrorsAreSquareShaped(t *testing.T) {
	t.Parallel()
	s := startDialect(t, dialectCaseNamed(t, "square"))
	squareErrorOf(t, s.pay(t, "sq-bad", -1), http.StatusBadRequest, "INVALID_REQUEST_ERROR", "BAD_REQUEST")
	squareErrorOf(t, s.raw(t, http.MethodGet, "/v1/payments/pay_nope", "", ""), http.StatusNotFound, "INVALID_REQUEST_ERROR", "NOT_FOUND")
	squareErrorOf(t, s.raw(t, http.MethodDelete, "/v1/payments", "", ""), http.StatusMethodNotAllowed, "INVALID_REQUEST_ERROR", "METHOD_NOT_ALLOWED")
	s.Faults().FailNext(1, http.StatusServiceUnavailable, time.Second)
	squareErrorOf(t, s.pay(t, "sq-fault", 1000), http.StatusServiceUnavailable, "API_ERROR", "SERVICE_UNAVAILABLE")
	assert.Zero(t, s.payments(t))
}

// Square's 5xx is not final: "resubmitting the request using the same
// idempotency_key if you receive a 429 RATE_LIMITED or 5XX" runs it.
func TestSquareDialect_Handler500IsNotFinal(t *testing.T) {
	t.Parallel()
	clock := &badYearClock{}
	s := startDialect(t, dialectCaseNamed(t, "square"), testserver.WithServerClock(clock.now))
	squareErrorOf(t, s.pay(t, "sq-500", 1000), http.StatusInternalServerError, "API_ERROR", "INTERNAL_SERVER_ERROR")
	clock.fixed.Store(true)
	assert.Equal(t, http.StatusCreated, s.pay(t, "sq-500", 1000).status)
	assert.Equal(t, 1, s.payments(t))
}
