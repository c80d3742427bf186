package idem

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxRedirects is how many redirects one attempt follows, as net/http's
// default policy.
const maxRedirects = 10

// intentRedirects is the redirect policy of the client that sends intents
// and polls operations, applied before the caller's own CheckRedirect:
//
//   - A 307 or 308 is followed with the same method, body and key (net/http
//     copies the headers): the key keeps the resend safe.
//   - A 301, 302 or 303 answering a non-idempotent request is not followed:
//     net/http would turn the POST into a GET of the Location, and the
//     GET's answer would be stored as the POST's, a payment never made
//     reported as made. The 3xx is the answer, a final one with its
//     Location, and the POST is never resent.
//   - A redirect to another origin (scheme, host or port) carries no secret
//     header: net/http strips Authorization and Cookie on its own only
//     across domains, and knows nothing of the headers marked secret (nor
//     of a dialect's credential headers, which are among them). Nor does
//     it carry the intent's secret query parameters, should the server
//     have echoed them into the Location, nor a Referer that names them.
func intentRedirects(secret, secretParams map[string]bool, next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		first := via[0]
		if req.Method != first.Method && !isIdempotentMethod(first.Method) {
			return http.ErrUseLastResponse
		}
		if !sameOrigin(first.URL, req.URL) {
			for name := range req.Header {
				if secret[http.CanonicalHeaderKey(name)] {
					delete(req.Header, name)
				}
			}
			dropEchoedSecretParams(req.URL, first.URL, secretParams)
			// net/http has set Referer to the redirected URL, query and
			// all: the intent's secret query parameters would go with it.
			if ref, err := url.Parse(req.Header.Get("Referer")); err == nil && len(urlSecretValues(ref, secretParams)) > 0 {
				req.Header.Del("Referer")
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("idem: stopped after 10 redirects")
		}
		return nil
	}
}

// sameOrigin reports whether a and b share scheme, host and port (RFC 6454),
// with default ports made explicit.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) &&
		strings.EqualFold(a.Hostname(), b.Hostname()) &&
		effectivePort(a) == effectivePort(b)
}

func effectivePort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// dropEchoedSecretParams removes from u every secret query parameter whose
// value is one of the secret parameter values of from (the request that
// was redirected): a credential of the intent's origin never goes to
// another. Parameters of u's own are left as they are.
func dropEchoedSecretParams(u, from *url.URL, secretParams map[string]bool) {
	if u.RawQuery == "" || from.RawQuery == "" {
		return
	}
	theirs := urlSecretValues(&url.URL{RawQuery: from.RawQuery}, secretParams)
	if len(theirs) == 0 {
		return
	}
	q := u.Query()
	changed := false
	for name, values := range q {
		if !secretParams[strings.ToLower(name)] {
			continue
		}
		kept := values[:0]
		for _, v := range values {
			if !slices.Contains(theirs, v) {
				kept = append(kept, v)
			}
		}
		if len(kept) != len(values) {
			changed = true
			if len(kept) == 0 {
				q.Del(name)
			} else {
				q[name] = kept
			}
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
}
