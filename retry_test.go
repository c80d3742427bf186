package idem

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
)

const testProblemPrefix = "https://idemkit.github.io/idem/problems/"

// recordedResponse builds a response the way a server would send it.
func recordedResponse(status int, header map[string]string, body string) *http.Response {
	rec := httptest.NewRecorder()
	for k, v := range header {
		rec.Header().Set(k, v)
	}
	rec.WriteHeader(status)
	_, _ = rec.WriteString(body)
	return rec.Result()
}

// problemResponse builds an RFC 9457 response whose type is typeURI.
func problemResponse(status int, typeURI string) *http.Response {
	body := fmt.Sprintf(`{"type":%q,"title":"t","status":%d}`, typeURI, status)
	return recordedResponse(status, map[string]string{"Content-Type": "application/problem+json"}, body)
}

// draftDialect is the default dialect, for classify.
var draftDialect = dialect.Draft()

func TestClassifyResponses(t *testing.T) {
	t.Parallel()
	location := map[string]string{"Location": "/v1/operations/op_1"}
	const (
		success    = outcomeSuccess
		accepted   = outcomeAccepted
		retry      = outcomeRetry
		unsure     = outcomeRetryUnsure
		reused     = outcomeKeyReused
		rejected   = outcomeRejected
		refused    = outcomeRefused
		unresolved = outcomeUnresolvable
	)
	tests := []struct {
		name string
		resp func() *http.Response
		// keyed is the outcome for a keyed POST (judged by the dialect),
		// post and put for unkeyed requests (judged by status).
		keyed, post, put outcome
	}{
		{"200", func() *http.Response { return recordedResponse(200, nil, `{}`) }, success, success, success},
		{"201", func() *http.Response { return recordedResponse(201, nil, `{"id":"pay_1"}`) }, success, success, success},
		{"204", func() *http.Response { return recordedResponse(204, nil, "") }, success, success, success},
		{"201 replay", func() *http.Response {
			return recordedResponse(201, map[string]string{"Idempotent-Replayed": "true"}, `{"id":"pay_1"}`)
		}, success, success, success},
		{"202 with Location", func() *http.Response { return recordedResponse(202, location, `{}`) }, accepted, success, success},
		{"202 without Location", func() *http.Response { return recordedResponse(202, nil, `{}`) }, success, success, success},
		{"408", func() *http.Response { return recordedResponse(408, nil, "") }, retry, retry, retry},
		{"425", func() *http.Response { return recordedResponse(425, nil, "") }, retry, retry, retry},
		{"429", func() *http.Response { return recordedResponse(429, map[string]string{"Retry-After": "1"}, "") }, retry, retry, retry},
		{"500", func() *http.Response { return recordedResponse(500, nil, "") }, unsure, unresolved, unsure},
		{"502", func() *http.Response { return recordedResponse(502, nil, "") }, unsure, unresolved, unsure},
		{"503", func() *http.Response { return recordedResponse(503, nil, "") }, unsure, unresolved, unsure},
		{"503 store-unavailable", func() *http.Response { return problemResponse(503, testProblemPrefix+"store-unavailable") }, retry, unresolved, unsure},
		{"504", func() *http.Response { return recordedResponse(504, nil, "") }, unsure, unresolved, unsure},
		{"507", func() *http.Response { return recordedResponse(507, nil, "") }, unsure, refused, refused},
		{"511", func() *http.Response { return recordedResponse(511, nil, "") }, unsure, refused, refused},
		{"520", func() *http.Response { return recordedResponse(520, nil, "") }, unsure, refused, refused},
		{"524", func() *http.Response { return recordedResponse(524, nil, "") }, unsure, refused, refused},
		{"598", func() *http.Response { return recordedResponse(598, nil, "") }, unsure, refused, refused},
		{"409 in-progress", func() *http.Response { return problemResponse(409, testProblemPrefix+"in-progress") }, unsure, refused, refused},
		{"409 about:blank", func() *http.Response { return problemResponse(409, "about:blank") }, unsure, refused, refused},
		{"409 plain JSON", func() *http.Response {
			return recordedResponse(409, map[string]string{"Content-Type": "application/json"},
				`{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`)
		}, unsure, refused, refused},
		{"409 without body", func() *http.Response { return recordedResponse(409, nil, "") }, unsure, refused, refused},
		{"422 key-reused", func() *http.Response { return problemResponse(422, testProblemPrefix+"key-reused") }, reused, refused, refused},
		{"422 key-reused, media type parameters", func() *http.Response {
			return recordedResponse(422, map[string]string{"Content-Type": "Application/Problem+JSON; charset=utf-8"},
				`{"type":"`+testProblemPrefix+`key-reused"}`)
		}, reused, refused, refused},
		{"422 about:blank", func() *http.Response { return problemResponse(422, "about:blank") }, refused, refused, refused},
		{"422 validation problem", func() *http.Response { return problemResponse(422, testProblemPrefix+"invalid-request") }, refused, refused, refused},
		{"422 key-reused as plain JSON", func() *http.Response {
			return recordedResponse(422, map[string]string{"Content-Type": "application/json"},
				`{"type":"`+testProblemPrefix+`key-reused"}`)
		}, refused, refused, refused},
		{"422 bad Content-Type", func() *http.Response {
			return recordedResponse(422, map[string]string{"Content-Type": "application/problem+json; ="},
				`{"type":"`+testProblemPrefix+`key-reused"}`)
		}, refused, refused, refused},
		{"400 missing-key", func() *http.Response { return problemResponse(400, testProblemPrefix+"missing-key") }, rejected, refused, refused},
		{"400 invalid-key", func() *http.Response { return problemResponse(400, testProblemPrefix+"invalid-key") }, rejected, refused, refused},
		{"400", func() *http.Response { return recordedResponse(400, nil, "") }, refused, refused, refused},
		{"401", func() *http.Response { return recordedResponse(401, nil, "") }, refused, refused, refused},
		{"403", func() *http.Response { return recordedResponse(403, nil, "") }, refused, refused, refused},
		{"404", func() *http.Response { return recordedResponse(404, nil, "") }, refused, refused, refused},
		{"407", func() *http.Response { return recordedResponse(407, nil, "") }, refused, refused, refused},
		{"410", func() *http.Response { return recordedResponse(410, nil, "") }, refused, refused, refused},
		{"413", func() *http.Response { return recordedResponse(413, nil, "") }, refused, refused, refused},
		{"501", func() *http.Response { return recordedResponse(501, nil, "") }, refused, refused, refused},
		{"505", func() *http.Response { return recordedResponse(505, nil, "") }, refused, refused, refused},
		{"301", func() *http.Response { return recordedResponse(301, location, "") }, unresolved, refused, refused},
		{"302", func() *http.Response { return recordedResponse(302, location, "") }, unresolved, refused, refused},
		{"303", func() *http.Response { return recordedResponse(303, location, "") }, success, refused, refused},
		{"304", func() *http.Response { return recordedResponse(304, nil, "") }, unresolved, refused, refused},
		{"103", func() *http.Response { return &http.Response{StatusCode: 103, Header: http.Header{}} }, unresolved, refused, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				method string
				keyed  bool
				want   outcome
			}{{http.MethodPost, true, tt.keyed}, {http.MethodPost, false, tt.post}, {http.MethodPut, false, tt.put}} {
				got := classify(&draftDialect, c.method, c.keyed, tt.resp(), nil)
				assert.Equal(t, c.want, got, "%s keyed=%v: got %s, want %s", c.method, c.keyed, got, c.want)
			}
		})
	}
}

func TestClassifyResponseWinsOverError(t *testing.T) {
	t.Parallel()
	// http.Client returns both when a redirect policy fails: the server
	// did answer.
	resp := recordedResponse(302, map[string]string{"Location": "/elsewhere"}, "")
	assert.Equal(t, outcomeUnresolvable, classify(&draftDialect, http.MethodPost, true, resp, errors.New("stopped after 10 redirects")))
}

func TestClassifyNothingIsUnknown(t *testing.T) {
	t.Parallel()
	assert.Equal(t, outcomeUnknown, classify(&draftDialect, http.MethodPost, true, nil, nil))
}

func TestClassifyProblemBodyStaysReadable(t *testing.T) {
	t.Parallel()
	body := `{"type":"` + testProblemPrefix + `key-reused","title":"reused","status":422}`
	resp := recordedResponse(422, map[string]string{"Content-Type": "application/problem+json"}, body)
	require.Equal(t, outcomeKeyReused, classify(&draftDialect, http.MethodPost, true, resp, nil))
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
}

// countingBody is a response body that records how much was read from it
// and whether it was closed.
type countingBody struct {
	r      io.Reader
	read   int
	closed bool
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func (c *countingBody) Close() error {
	c.closed = true
	return nil
}

func TestClassifyPeeksOnlyABoundedPrefix(t *testing.T) {
	t.Parallel()
	// A problem document padded past the limit: the type is there, but the
	// prefix is not a whole JSON document, so it is not the idem problem.
	body := `{"type":"` + testProblemPrefix + `key-reused","detail":"` +
		strings.Repeat("x", 1<<20) + `"}`
	src := &countingBody{r: strings.NewReader(body)}
	resp := &http.Response{
		StatusCode: 422,
		Header:     http.Header{"Content-Type": {"application/problem+json"}},
		Body:       src,
	}
	assert.Equal(t, outcomeRefused, classify(&draftDialect, http.MethodPost, true, resp, nil))
	assert.LessOrEqual(t, src.read, dialect.BodyPeek)

	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, len(body), len(got))
	assert.True(t, string(got) == body, "body must come back byte for byte")
	require.NoError(t, resp.Body.Close())
	assert.True(t, src.closed, "closing the body closes the original")
}

func TestClassifyLeavesSuccessBodiesUntouched(t *testing.T) {
	t.Parallel()
	for _, status := range []int{200, 201, 202, 204} {
		src := &countingBody{r: strings.NewReader(`{"type":"x/in-progress"}`)}
		resp := &http.Response{
			StatusCode: status,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       src,
		}
		classify(&draftDialect, http.MethodPost, true, resp, nil)
		assert.Zero(t, src.read, "status %d", status)
		assert.Same(t, src, resp.Body, "status %d", status)
	}
}

func TestClassifyPeekKeepsReadErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset mid-body")
	prefix := `{"type":"` + testProblemPrefix + `in-`
	resp := &http.Response{
		StatusCode: 422,
		Header:     http.Header{"Content-Type": {"application/problem+json"}},
		Body:       io.NopCloser(io.MultiReader(strings.NewReader(prefix), &errReader{err: boom})),
	}
	assert.Equal(t, outcomeRefused, classify(&draftDialect, http.MethodPost, true, resp, nil))
	got, err := io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, prefix, string(got))
}

// transportErrorCase is a real transport error and whether the request could
// have left before it.
type transportErrorCase struct {
	name      string
	err       func(t *testing.T) error
	written   bool
	cancelled bool
}

func TestClassifyTransportErrors(t *testing.T) {
	t.Parallel()
	cases := []transportErrorCase{
		{name: "dial to a closed port", err: dialClosedPort},
		{name: "DNS failure", err: dnsFailure},
		{name: "proxy unreachable", err: proxyUnreachable},
		{name: "TLS handshake with a plain HTTP server", err: tlsToPlainServer},
		{name: "TLS handshake with a non-TLS server", err: tlsToNonTLSServer},
		{name: "TLS certificate not trusted", err: untrustedCertificate},
		{name: "reset after the request was read", err: resetAfterRequest, written: true},
		{name: "hang-up after the request was read", err: hangUpAfterRequest, written: true},
		{name: "attempt timeout", err: attemptTimeout, written: true},
		{name: "io.EOF", err: func(*testing.T) error { return io.EOF }, written: true},
		{name: "io.ErrUnexpectedEOF", err: func(*testing.T) error { return io.ErrUnexpectedEOF }, written: true},
		{name: "wrapped EOF", err: func(*testing.T) error {
			return &url.Error{Op: "Post", URL: "http://x", Err: io.ErrUnexpectedEOF}
		}, written: true},
		{name: "unrecognised error", err: func(*testing.T) error { return errors.New("something odd") }, written: true},
		{name: "cancelled in flight", err: cancelledInFlight, written: true, cancelled: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.err(t)
			require.Error(t, err)
			t.Logf("error: %v", err)
			assert.Equal(t, tc.written, requestMayHaveBeenWritten(err), "error: %v", err)
			for _, shape := range []struct {
				name   string
				method string
				keyed  bool
			}{{"unkeyed POST", http.MethodPost, false}, {"keyed POST", http.MethodPost, true}, {"unkeyed PUT", http.MethodPut, false}} {
				want := outcomeRetry
				switch {
				case tc.written && tc.cancelled:
					want = outcomeUnknown
				case tc.written && !shape.keyed && !isIdempotentMethod(shape.method):
					want = outcomeUnknown
				case tc.written:
					want = outcomeRetryUnsure
				}
				got := classify(&draftDialect, shape.method, shape.keyed, nil, err)
				assert.Equal(t, want, got, "%s: got %s, want %s (error: %v)", shape.name, got, want, err)
			}
		})
	}
}

func TestRequestMayHaveBeenWrittenNil(t *testing.T) {
	t.Parallel()
	assert.False(t, requestMayHaveBeenWritten(nil))
}

// postOnce sends a small POST with client and returns its error, closing any
// response.
func postOnce(t *testing.T, client *http.Client, target string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	return postOnceContext(ctx, client, target)
}

func postOnceContext(ctx context.Context, client *http.Client, target string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(`{"amount":1000}`))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	if err == nil {
		return errors.New("request unexpectedly succeeded")
	}
	return err
}

// freshClient returns a client that opens a new connection per request.
func freshClient(t *testing.T) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func dialClosedPort(t *testing.T) error {
	return postOnce(t, freshClient(t), "http://"+closedAddr(t)+"/v1/payments")
}

func dnsFailure(t *testing.T) error {
	// .invalid never resolves (RFC 6761).
	return postOnce(t, freshClient(t), "http://idem-test.invalid/v1/payments")
}

func proxyUnreachable(t *testing.T) error {
	proxy := &url.URL{Scheme: "http", Host: closedAddr(t)}
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return postOnce(t, &http.Client{Transport: tr}, "http://example.invalid/v1/payments")
}

func tlsToPlainServer(t *testing.T) error {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return postOnce(t, freshClient(t), strings.Replace(srv.URL, "http://", "https://", 1))
}

func tlsToNonTLSServer(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			// Greets in a protocol that is neither TLS nor HTTP.
			_, _ = conn.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			_ = conn.Close()
		}
	}()
	return postOnce(t, freshClient(t), "https://"+ln.Addr().String()+"/v1/payments")
}

func untrustedCertificate(t *testing.T) error {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	// The server's own log of the failed handshake is expected noise.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return postOnce(t, freshClient(t), srv.URL)
}

// rawServer accepts connections, reads one whole request from each, then
// lets after decide how to end the connection.
func rawServer(t *testing.T, after func(c *net.TCPConn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				after(conn.(*net.TCPConn))
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/v1/payments"
}

func resetAfterRequest(t *testing.T) error {
	target := rawServer(t, func(c *net.TCPConn) {
		_ = c.SetLinger(0) // close with RST instead of FIN
	})
	return postOnce(t, freshClient(t), target)
}

func hangUpAfterRequest(t *testing.T) error {
	target := rawServer(t, func(*net.TCPConn) {})
	return postOnce(t, freshClient(t), target)
}

// holdingServer answers nothing until the request is cancelled, and tells
// received about each request it got.
func holdingServer(t *testing.T, received chan<- struct{}) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if received != nil {
			received <- struct{}{}
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func attemptTimeout(t *testing.T) error {
	target := holdingServer(t, nil)
	client := freshClient(t)
	client.Timeout = 100 * time.Millisecond
	return postOnce(t, client, target)
}

func cancelledInFlight(t *testing.T) error {
	received := make(chan struct{}, 1)
	target := holdingServer(t, received)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-received
		cancel()
	}()
	err := postOnceContext(ctx, freshClient(t), target)
	assert.ErrorIs(t, err, context.Canceled)
	return err
}

func TestClassifyCancelledBeforeWritingIsNotUnknown(t *testing.T) {
	t.Parallel()
	// Nothing left the client, so nothing can have taken effect; the retry
	// loop stops on its own ctx.Err().
	err := &net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}
	assert.False(t, requestMayHaveBeenWritten(err))
	assert.Equal(t, outcomeRetry, classify(&draftDialect, http.MethodPost, false, nil, err))
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	names := map[outcome]string{
		outcomeSuccess:      "success",
		outcomeAccepted:     "accepted",
		outcomeRetry:        "retry",
		outcomeRetryUnsure:  "retry-unsure",
		outcomeKeyReused:    "key-reused",
		outcomeRejected:     "rejected",
		outcomeRefused:      "refused",
		outcomeUnresolvable: "unresolvable",
		outcomeUnknown:      "unknown",
		outcome(42):         "outcome(42)",
	}
	for o, want := range names {
		assert.Equal(t, want, o.String())
	}
}

func TestClassifyIdempotentMethods(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"", "GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"} {
		assert.True(t, isIdempotentMethod(m), m)
	}
	for _, m := range []string{"POST", "PATCH", "CONNECT", "get", "PROPFIND"} {
		assert.False(t, isIdempotentMethod(m), m)
	}
}

func FuzzClassifyProblemBody(f *testing.F) {
	f.Add(409, `{"type":"`+testProblemPrefix+`in-progress"}`)
	f.Add(422, `{"type":"`+testProblemPrefix+`key-reused"}`)
	f.Add(409, `{"type":1}`)
	f.Add(422, `[`)
	f.Add(409, "")
	f.Fuzz(func(t *testing.T, status int, body string) {
		if status != 409 && status != 422 {
			status = 409
		}
		resp := recordedResponse(status, map[string]string{"Content-Type": "application/problem+json"}, body)
		got := classify(&draftDialect, http.MethodPost, true, resp, nil)
		switch got {
		case outcomeRetryUnsure, outcomeKeyReused, outcomeRefused:
		default:
			t.Fatalf("status %d classified as %s", status, got)
		}
		rest, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(rest, []byte(body)) {
			t.Fatalf("body not restored: %q, %v", rest, err)
		}
	})
}
