package idemtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// otherURL is the URL of OtherEndpoint, "" without one.
func otherURL(base, endpoint string) string {
	if endpoint == "" {
		return ""
	}
	return base + endpoint
}

// withQuery returns u with the query parameter param added.
func withQuery(u, param string) string {
	if strings.Contains(u, "?") {
		return u + "&" + param
	}
	return u + "?" + param
}

// checkRequestTarget: a used key sent with the same body to another
// request target — another query string, or (with OtherEndpoint) another
// path value of the same operation — is another request. draft-07 §2.4
// leaves the fingerprint to the server ("An idempotency fingerprint MAY
// be used in conjunction with an idempotency key to determine the
// uniqueness of a request."), so this is graded in the idem profile: 422
// /key-reused, as for another body, never the first answer replayed.
func (r *conformanceRun) checkRequestTarget(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	key, body := r.newKey(), r.body()
	tag := strings.ToLower(randomText())
	first, err := r.post(ctx, outgoing{what: "keyed request with a query", keys: []string{key}, body: body,
		url: withQuery(r.cfg.url, "idem_check="+tag+"a")})
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(first)
	if !first.success() {
		return skip("the endpoint refused a query string (%s), so the check cannot vary it", first.summary())
	}
	variants := []outgoing{{what: "same key and body, another query", url: withQuery(r.cfg.url, "idem_check="+tag+"b")}}
	if r.cfg.otherURL != "" {
		variants = append(variants, outgoing{what: "same key and body, the other endpoint", url: withQuery(r.cfg.otherURL, "idem_check="+tag+"a")})
	}
	var failures []string
	for _, o := range variants {
		o.keys, o.body = []string{key}, body
		e, err := r.post(ctx, o)
		if err != nil {
			return fail("%v", err)
		}
		r.noteProblem(e)
		switch {
		case e.success() && r.cfg.repeats(e, first):
			failures = append(failures, fmt.Sprintf("%s: got the first answer replayed (%d): the request target is not in the fingerprint", o.what, e.status))
		case e.success():
			failures = append(failures, fmt.Sprintf("%s: ran again under the used key (%s), want 422", o.what, e.summary()))
		case e.status != http.StatusUnprocessableEntity:
			failures = append(failures, fmt.Sprintf("%s: got %s, want 422", o.what, e.summary()))
		default:
			r.expectType(e, "key-reused")
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	if r.cfg.otherURL == "" {
		return pass("another query under a used key: 422 (no other endpoint given, so no path value varied)")
	}
	return pass("another query and another path value under a used key: 422")
}
