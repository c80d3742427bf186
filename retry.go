package idem

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// outcome is what one attempt's result means for the call, following the
// "Outcome of one attempt" table of the protocol.
type outcome int

const (
	// outcomeSuccess: a 2xx other than 202-with-Location (a replay too).
	outcomeSuccess outcome = iota
	// outcomeAccepted: 202 with a Location to poll.
	outcomeAccepted
	// outcomeRetry: worth another attempt with the same key: 408, 425, 429,
	// 500, 502, 503, 504, 409 /in-progress; a transport error before the
	// request was written; or after it, when the request is keyed or the
	// method idempotent.
	outcomeRetry
	// outcomeKeyReused: 422 /key-reused; never retried.
	outcomeKeyReused
	// outcomeFinal: a final non-2xx answer (other 4xx, 501, 505, 3xx, ...).
	outcomeFinal
	// outcomeUnknown: the request may have taken effect and may not be
	// resent: a transport error after it may have been written, unkeyed and
	// non-idempotent, or the caller cancelled it in flight.
	outcomeUnknown
)

// String names the outcome for logs.
func (o outcome) String() string {
	switch o {
	case outcomeSuccess:
		return "success"
	case outcomeAccepted:
		return "accepted"
	case outcomeRetry:
		return "retry"
	case outcomeKeyReused:
		return "key-reused"
	case outcomeFinal:
		return "final"
	case outcomeUnknown:
		return "unknown"
	default:
		return "outcome(" + strconv.Itoa(int(o)) + ")"
	}
}

// Problem type suffixes the protocol defines; clients match on the suffix
// so any server's type URI prefix works.
const (
	problemSuffixInProgress = "/in-progress"
	problemSuffixKeyReused  = "/key-reused"
)

// classify decides what one attempt's result means. keyed says whether the
// request carried an Idempotency-Key.
//
// A response, when there is one, wins over err: the server answered. For a
// 409 or 422 classify reads the problem type from at most problemPeekLimit
// bytes of an application/problem+json body and puts them back, so
// resp.Body still yields the whole body.
//
// A context.Canceled error is never retried: it is outcomeUnknown when the
// request may have been written. A deadline is treated as a timeout like
// any other, since an http.Client's per-attempt Timeout reports itself as
// context.DeadlineExceeded; the retry loop stops on its own ctx.Err(), which
// covers the caller's deadline. A call with neither a response nor an
// error is a misuse; it gives outcomeUnknown so nothing is assumed.
func classify(method string, keyed bool, resp *http.Response, err error) outcome {
	if resp != nil {
		return classifyResponse(resp)
	}
	if err == nil {
		return outcomeUnknown
	}
	if !requestMayHaveBeenWritten(err) {
		return outcomeRetry
	}
	if errors.Is(err, context.Canceled) {
		return outcomeUnknown
	}
	if keyed || isIdempotentMethod(method) {
		return outcomeRetry
	}
	return outcomeUnknown
}

// classifyResponse maps a status code (and, for 409 and 422, the problem
// type) to an outcome.
func classifyResponse(resp *http.Response) outcome {
	code := resp.StatusCode
	switch {
	case code == http.StatusAccepted && resp.Header.Get("Location") != "":
		return outcomeAccepted
	case code >= 200 && code <= 299:
		return outcomeSuccess
	}
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return outcomeRetry
	case http.StatusConflict:
		if strings.HasSuffix(problemType(resp), problemSuffixInProgress) {
			return outcomeRetry
		}
	case http.StatusUnprocessableEntity:
		if strings.HasSuffix(problemType(resp), problemSuffixKeyReused) {
			return outcomeKeyReused
		}
	}
	// Everything else is a final answer: other 4xx, 501, 505, the rarer
	// 5xx, and 1xx/3xx that reached us unfollowed.
	return outcomeFinal
}

// requestMayHaveBeenWritten reports whether a transport error could have
// happened after bytes of the request left. It is false only for errors
// that provably come before: DNS failures, dial failures, proxy CONNECT and
// SOCKS failures reported as *net.OpError, and TLS handshake failures
// (certificate verification, a non-TLS peer, a TLS alert). Failures net/http
// reports without a type, such as a TLS handshake timeout or a proxy that
// refuses CONNECT, count as possibly written. Everything else
// (resets, EOF, timeouts, errors it does not recognise) may have been
// written, since guessing wrong there could duplicate a payment.
func requestMayHaveBeenWritten(err error) bool {
	if err == nil {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return false
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && isConnectOp(opErr.Op) {
		return false
	}
	return !isTLSHandshakeError(err)
}

// isConnectOp reports whether a net.OpError's Op names a step of opening
// the connection: the dial itself, net/http's proxy connect, or a SOCKS
// handshake.
func isConnectOp(op string) bool {
	return op == "dial" || op == "proxyconnect" || strings.HasPrefix(op, "socks ")
}

// isTLSHandshakeError reports whether err comes from a failed TLS
// handshake, before any request byte is sent. An alert the server sends
// after a TLS 1.3 handshake (such as a rejected client certificate) also
// counts: the server refused the connection before reading the request.
// http.ErrSchemeMismatch is how net/http reports a handshake answered in
// plain HTTP.
func isTLSHandshakeError(err error) bool {
	if errors.Is(err, http.ErrSchemeMismatch) {
		return true
	}
	var (
		verifyErr   *tls.CertificateVerificationError
		recordErr   tls.RecordHeaderError
		alertErr    tls.AlertError
		echErr      *tls.ECHRejectionError
		unknownAuth x509.UnknownAuthorityError
		hostnameErr x509.HostnameError
		invalidErr  x509.CertificateInvalidError
	)
	return errors.As(err, &verifyErr) ||
		errors.As(err, &recordErr) ||
		errors.As(err, &alertErr) ||
		errors.As(err, &echErr) ||
		errors.As(err, &unknownAuth) ||
		errors.As(err, &hostnameErr) ||
		errors.As(err, &invalidErr)
}

// isIdempotentMethod reports whether RFC 9110 defines method as idempotent,
// so that repeating it cannot add an effect. "" is GET, as in net/http.
func isIdempotentMethod(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	default:
		return false
	}
}

// problemPeekLimit bounds how much of a body classify reads to find a
// problem type. Problem documents are small; a larger body is not one of
// the protocol's.
const problemPeekLimit = 64 << 10

// problemType returns the RFC 9457 type of an application/problem+json
// response, or "" when the body is not such a document. It reads at most
// problemPeekLimit bytes and replaces resp.Body with a reader that yields
// them again followed by the rest, so the caller still sees the whole body.
func problemType(resp *http.Response) string {
	if resp.Body == nil || resp.Body == http.NoBody {
		return ""
	}
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/problem+json" {
		return ""
	}
	prefix, readErr := io.ReadAll(io.LimitReader(resp.Body, problemPeekLimit))
	resp.Body = &replayBody{
		Reader: io.MultiReader(bytes.NewReader(prefix), restOf(resp.Body, readErr)),
		Closer: resp.Body,
	}
	var doc struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(prefix, &doc) != nil {
		return ""
	}
	return doc.Type
}

// restOf is what follows the peeked prefix: the body itself, or the error
// that cut the peek short, so the caller sees it too.
func restOf(body io.Reader, readErr error) io.Reader {
	if readErr != nil {
		return &errReader{err: readErr}
	}
	return body
}

// replayBody is a response body whose first bytes were already read once.
type replayBody struct {
	io.Reader
	io.Closer
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }
