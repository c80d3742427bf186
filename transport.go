package idem

import (
	"errors"
	"fmt"
	"net/http"
)

// Transport returns an http.RoundTripper that makes an existing API client
// safe to retry without changing its code:
//
//	api := &http.Client{Transport: client.Transport()}
//
// A POST or PATCH without an Idempotency-Key gets an ephemeral one, the
// same on every attempt of that request (it is not persisted: a crash
// loses it; use Begin and Do for intents that must survive one). Requests
// are retried with the client's policy (attempts, backoff, Retry-After,
// budget, deadline) over the client's connection pool, the body buffered
// so it can be sent again (up to MaxBodySize). Redirects and cookies are
// left to the http.Client that uses the transport.
//
// When retries run out with an answer, the last response is returned
// with a nil error, as a plain transport would; without one, the error is
// a *GiveUpError. A request that may have taken effect and cannot be
// retried safely (unkeyed, not idempotent) fails with an error matching
// ErrOutcomeUnknown.
func (c *Client) Transport() http.RoundTripper {
	inner := shieldedClient(c.cfg.httpClient)
	inner.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	inner.Jar = nil
	return &transport{c: c, inner: inner}
}

type transport struct {
	c     *Client
	inner *http.Client
}

// RoundTrip sends req with retries. It never modifies req, and always
// closes req.Body.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req != nil && req.Body != nil {
		defer req.Body.Close()
	}
	if err := t.c.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := readBounded(req.Body, req.ContentLength)
		if err != nil {
			return nil, err
		}
		body = b
	}
	ctx := req.Context()
	out := req.Clone(ctx)
	out.Body = nil
	out.Method = requestMethod(req)

	cl := &call{req: out, body: body, client: t.inner, keyed: out.Header.Get("Idempotency-Key") != ""}
	if !cl.keyed && (out.Method == http.MethodPost || out.Method == http.MethodPatch) {
		key, err := t.c.cfg.keyGen()
		if err != nil {
			return nil, fmt.Errorf("idem: generating key: %w", err)
		}
		if !validKey(key) {
			return nil, errors.New("idem: key generator returned an invalid key (need 1-255 visible ASCII characters)")
		}
		cl.key, cl.keyed = key, true
	}
	cl.logID = out.Header.Get("Idempotency-Key") + cl.key

	res := t.c.send(ctx, cl)
	if res.stop == nil {
		return res.resp, nil
	}
	if res.resp != nil {
		return res.resp, nil
	}
	return nil, res.giveUp(out.Header.Get("Idempotency-Key") + cl.key)
}
