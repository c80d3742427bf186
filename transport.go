package idem

import (
	"errors"
	"net/http"
	"strings"

	"github.com/idemkit/idem/dialect"
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
// A final answer (a success, a refusal) is returned as a plain transport
// would. A 409 to the first attempt of a request the transport keyed
// itself is final too: no earlier request carries that key, so it is not
// the key's request in progress but the server's answer (a business
// conflict). A 409 to a request keyed by the caller, or to a later
// attempt, may be the key's request still running and is retried. When the transport gives up (attempts, budget, a wait beyond the
// deadline), the error is a *GiveUpError whose Response holds the last
// answer, body in memory, if there was one. A request that may have taken
// effect and cannot be retried safely (unkeyed, not idempotent) fails with
// an error matching ErrOutcomeUnknown. A caller's own key is kept, in the
// dialect's header under any spelling; a method the transport does not
// key (anything but POST and PATCH) is retried only when it is idempotent
// or the answer says it was not executed. Under a dialect that places the
// key in the body by a function (dialect.Shopify), a body with no place
// for one (a GraphQL query) goes out unkeyed, like such a method.
func (c *Client) Transport() http.RoundTripper {
	if c.checkOpen() == ErrClientNotOpen {
		return &transport{c: c} // every RoundTrip says so
	}
	inner := shieldedClient(c.cfg.httpClient) // its transport: WithBaseTransport, or WithHTTPClient's
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
		if err := checkBodyUnread(req, b); err != nil {
			return nil, err
		}
		body = b
	}
	ctx := req.Context()
	out := req.Clone(ctx)
	out.Body = nil
	out.Method = requestMethod(req)

	cl, err := t.c.transportCall(out, body, t.inner)
	if err != nil {
		return nil, err
	}
	res := t.c.send(ctx, cl)
	if res.stop == nil {
		return res.resp, nil
	}
	ge := res.giveUp(cl.logID)
	ge.Response = bufferLast(res.resp)
	return nil, ge
}

// transportCall is the call Transport makes of out: keyed with the key the
// caller gave (in the dialect's header under any spelling, or its place
// in the body), or with a new one for POST and PATCH.
func (c *Client) transportCall(out *http.Request, body []byte, hc *http.Client) (*call, error) {
	cl := &call{req: out, body: body, client: hc}
	d := &c.cfg.dialect
	if d.KeyHeader != "" {
		for name, values := range out.Header {
			if len(values) > 0 && strings.EqualFold(name, d.KeyHeader) {
				cl.keyed, cl.logID = true, values[0]
			}
		}
	} else if len(body) > 0 {
		k, ok, err := findBodyKey(d, body)
		if err == nil && ok {
			cl.keyed, cl.logID = true, k
		}
		if d.PlaceKey != nil && errors.Is(err, dialect.ErrNoKeyPlace) {
			// A GraphQL query, say: no mutation to key. It goes out
			// unkeyed, as a plain transport would send it, and is
			// resent only when the answer proves it did not run.
			return cl, nil
		}
	}
	if cl.keyed || (out.Method != http.MethodPost && out.Method != http.MethodPatch) {
		return cl, nil
	}
	key, b, err := c.intentKey(body, "")
	if err != nil {
		return nil, err
	}
	cl.body, cl.keyed, cl.logID, cl.freshKey = b, true, key, true
	if d.KeyHeader != "" {
		cl.key = key
	}
	return cl, nil
}
