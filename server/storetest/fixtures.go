package storetest

import (
	"crypto/rand"
	"net/http"

	"github.com/idemkit/idem/server"
)

// NewScope returns a POST /v1/payments scope with a principal no other
// test uses, so tests sharing one database never meet.
func NewScope() server.Scope {
	return server.Scope{Principal: "tok_" + rand.Text(), Method: http.MethodPost, Route: "/v1/payments"}
}

// JSONResponse returns a 201 Created JSON response carrying body.
func JSONResponse(body string) server.Response {
	return server.Response{
		Status: http.StatusCreated,
		Header: http.Header{"Content-Type": {"application/json"}},
		Body:   []byte(body),
	}
}
