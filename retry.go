package idem

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/idemkit/idem/dialect"
)

// outcome is what one attempt's result means for the call, following the
// "Outcome of one attempt" table of the protocol.
type outcome int

const (
	// outcomeSuccess: the request was executed and this is its final
	// answer (a 2xx other than 202-with-Location, a replay, a 303).
	outcomeSuccess outcome = iota
	// outcomeAccepted: 202 with a Location to poll.
	outcomeAccepted
	// outcomeRetry: not executed this time (429, 408, 425, a store that
	// failed closed), or a transport error before the request was
	// written: worth another attempt with the same key.
	outcomeRetry
	// outcomeRetryUnsure: may have been executed (a 5xx, a 409 in
	// progress, a transport error after the request may have been
	// written, keyed or idempotent): worth another attempt with the same
	// key, and the intent may have taken effect.
	outcomeRetryUnsure
	// outcomeKeyReused: the key belongs to another payload; never retried.
	outcomeKeyReused
	// outcomeRejected: the server proves it did not execute the request;
	// final.
	outcomeRejected
	// outcomeRefused: a final refusal that proves nothing about earlier
	// attempts (401, 403, a validation error, 501 ...).
	outcomeRefused
	// outcomeUnresolvable: may have been executed, and resending will not
	// tell (a replayed 500, 301/302 after a POST); stop.
	outcomeUnresolvable
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
	case outcomeRetryUnsure:
		return "retry-unsure"
	case outcomeKeyReused:
		return "key-reused"
	case outcomeRejected:
		return "rejected"
	case outcomeRefused:
		return "refused"
	case outcomeUnresolvable:
		return "unresolvable"
	case outcomeUnknown:
		return "unknown"
	default:
		return "outcome(" + strconv.Itoa(int(o)) + ")"
	}
}

// outcomeOfVerdict maps a dialect's verdict on an answer to an outcome.
func outcomeOfVerdict(v dialect.Verdict) outcome {
	switch v {
	case dialect.Success:
		return outcomeSuccess
	case dialect.Accepted:
		return outcomeAccepted
	case dialect.InProgress, dialect.RetryMaybeExecuted:
		return outcomeRetryUnsure
	case dialect.RetryNotExecuted:
		return outcomeRetry
	case dialect.KeyReused:
		return outcomeKeyReused
	case dialect.Rejected:
		return outcomeRejected
	case dialect.Unresolvable:
		return outcomeUnresolvable
	default:
		return outcomeRefused
	}
}

// classify decides what one attempt's result means. keyed says whether the
// request carried an idempotency key: a keyed answer is judged by the
// dialect d, an unkeyed one (a poll, a request Transport does not key) by
// its status alone.
//
// A response, when there is one, wins over err: the server answered. For a
// non-2xx keyed answer (any, for a dialect with SuccessBodies), classify
// shows the dialect at most
// dialect.BodyPeek bytes of the body and puts them back, so resp.Body
// still yields the whole body.
//
// A context.Canceled error is never retried: it is outcomeUnknown when the
// request may have been written. A deadline is treated as a timeout like
// any other, since an http.Client's per-attempt Timeout reports itself as
// context.DeadlineExceeded; the retry loop stops on its own ctx.Err(), which
// covers the caller's deadline. A call with neither a response nor an
// error is a misuse; it gives outcomeUnknown so nothing is assumed.
func classify(d *dialect.Dialect, method string, keyed bool, resp *http.Response, err error) outcome {
	if resp != nil {
		if keyed {
			return outcomeOfVerdict(d.Classify(answerOf(d, method, resp)))
		}
		return classifyUnkeyed(method, resp.StatusCode)
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
		return outcomeRetryUnsure
	}
	return outcomeUnknown
}

// classifyUnkeyed judges an answer to a request without a key by its
// status: only the answers that say "try again" are retried, and an
// answer to a non-idempotent request that may have executed is not.
func classifyUnkeyed(method string, code int) outcome {
	switch {
	case code == http.StatusAccepted:
		return outcomeSuccess
	case code >= 200 && code <= 299:
		return outcomeSuccess
	}
	switch code {
	case http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests:
		return outcomeRetry
	case http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if isIdempotentMethod(method) {
			return outcomeRetryUnsure
		}
		return outcomeUnresolvable
	}
	return outcomeRefused
}

// answerOf is what dialect d is shown of resp: its status and header and,
// for a non-2xx answer (any answer when d.SuccessBodies), the first
// dialect.BodyPeek bytes of its body, which are put back so resp.Body
// still yields the whole body.
func answerOf(d *dialect.Dialect, method string, resp *http.Response) dialect.Answer {
	a := dialect.Answer{Method: method, Status: resp.StatusCode, Header: resp.Header}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 && !d.SuccessBodies {
		return a
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		return a
	}
	prefix, readErr := io.ReadAll(io.LimitReader(resp.Body, dialect.BodyPeek))
	resp.Body = &replayBody{
		Reader: io.MultiReader(bytes.NewReader(prefix), restOf(resp.Body, readErr)),
		Closer: resp.Body,
	}
	a.Body = prefix
	return a
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
