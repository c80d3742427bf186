package bench

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
)

// answeredPayment is the body answeringTransport returns: a created
// payment as the reference server writes it.
var answeredPayment = []byte(`{"id":"pay_0123456789abcdef","object":"payment","amount":1000,"currency":"EUR","reference":"invoice-2025-0001","status":"succeeded"}`)

// answeringTransport answers every request with a 201 and the headers
// the reference server sends with a created payment, without a network:
// it reads and closes the request body, as a server would.
type answeringTransport struct{}

func (answeringTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := http.Header{
		"Content-Type":    {"application/json"},
		"Content-Length":  {strconv.Itoa(len(answeredPayment))},
		"Date":            {"Tue, 01 Dec 2026 17:00:00 GMT"},
		"Idempotency-Key": {r.Header.Get("Idempotency-Key")},
		"Location":        {"/v1/payments/pay_0123456789abcdef"},
	}
	return &http.Response{
		StatusCode: http.StatusCreated, Status: "201 Created",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(answeredPayment)),
		ContentLength: int64(len(answeredPayment)), Request: r,
	}, nil
}
