package storetest

import (
	"crypto/rand"
	"net/http"
	"time"

	"github.com/idemkit/idem/internal/testserver"
)

// NewScope returns a POST /v1/payments scope with a principal no other
// test uses, so tests sharing one database never meet.
func NewScope() testserver.Scope {
	return testserver.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

// NewPayment returns a succeeded payment of principal with a fresh id,
// created now to the microsecond, the finest time every store keeps.
func NewPayment(principal string) testserver.Payment {
	return testserver.Payment{
		ID: "pay_" + rand.Text(), Principal: principal, Amount: 100, Currency: "EUR",
		Status: "succeeded", Created: time.Now().UTC().Truncate(time.Microsecond),
	}
}

// JSONResponse returns a 201 Created JSON response carrying body.
func JSONResponse(body string) testserver.Response {
	return testserver.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(body),
	}
}
