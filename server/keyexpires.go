package server

import (
	"net/http"
	"time"
)

// KeyExpiresHeader tells the client until when the server keeps its key:
// an HTTP-date (RFC 9110 §5.6.7) on every answer the layer stored and on
// every replay. After it a request with the key is a new request. No
// standard header says this (draft-ietf-httpapi-idempotency-key-header-07
// leaves the expiration policy to the documentation), so the name is the
// project's own; see docs/PROTOCOL.md, Choices.
const KeyExpiresHeader = "Idempotency-Key-Expires"

// setKeyExpires sets KeyExpiresHeader to at, unless at is unknown.
func setKeyExpires(h http.Header, at time.Time) {
	if at.IsZero() {
		return
	}
	h.Set(KeyExpiresHeader, at.UTC().Format(http.TimeFormat))
}
