package server

import (
	"net/http"
	"sync/atomic"
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
	h[KeyExpiresHeader] = []string{httpDate(at)} // the name is canonical
}

// formattedDate is an HTTP-date and the Unix second it stands for.
type formattedDate struct {
	unix int64
	text string
}

// lastDate is the HTTP-date formatted last: the answers of one second
// share it instead of each formatting its own.
var lastDate atomic.Pointer[formattedDate]

// httpDate returns at as an HTTP-date (http.TimeFormat).
func httpDate(at time.Time) string {
	unix := at.Unix()
	if d := lastDate.Load(); d != nil && d.unix == unix {
		return d.text
	}
	text := at.UTC().Format(http.TimeFormat)
	lastDate.Store(&formattedDate{unix: unix, text: text})
	return text
}
