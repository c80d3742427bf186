package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/idemkit/idem"
)

// origin is a URL's scheme, host and port (RFC 6454), lower-cased and
// with the default port made explicit, so two spellings of one origin
// compare equal.
type origin struct{ scheme, host, port string }

// originOf is u's origin; ok is false for a URL that has none (not http
// or https, or no host).
func originOf(u *url.URL) (o origin, ok bool) {
	if u == nil {
		return origin{}, false
	}
	o.scheme = strings.ToLower(u.Scheme)
	o.host = strings.ToLower(u.Hostname())
	o.port = u.Port()
	if o.port == "" {
		switch o.scheme {
		case "http":
			o.port = "80"
		case "https":
			o.port = "443"
		}
	}
	return o, (o.scheme == "http" || o.scheme == "https") && o.host != ""
}

// String is the origin as a URL, the default port left out.
func (o origin) String() string {
	host := o.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if (o.scheme == "http" && o.port == "80") || (o.scheme == "https" && o.port == "443") {
		return o.scheme + "://" + host
	}
	return o.scheme + "://" + net.JoinHostPort(o.host, o.port)
}

// parseOrigin reads an --origin value. A path, query or user info is
// refused rather than dropped: credentials are scoped by origin alone,
// and a path would suggest a narrower scope than they get.
func parseOrigin(s string) (origin, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return origin{}, fmt.Errorf("--origin %q: %v", s, err)
	}
	o, ok := originOf(u)
	switch {
	case !ok:
		return origin{}, fmt.Errorf("--origin %q: want http:// or https:// and a host, e.g. https://api.example.com", s)
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return origin{}, fmt.Errorf("--origin %q: want only scheme://host[:port], e.g. %s", s, o)
	}
	return o, nil
}

// originSet holds the origins credentials may be sent to.
type originSet map[origin]bool

// has reports whether u's origin is in the set.
func (s originSet) has(u *url.URL) bool {
	o, ok := originOf(u)
	return ok && s[o]
}

// leavesOut is the origin of raw when it is not in the set, "" when it
// is (or raw has no origin).
func (s originSet) leavesOut(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	o, ok := originOf(u)
	if !ok || s[o] {
		return ""
	}
	return o.String()
}

// credentialScope says which origins get --token and --header: those
// given with --origin, else the origins of the intents selected.
func credentialScope(f resumeFlags, intents []*idem.Intent) originSet {
	set := originSet{}
	if len(f.origins) > 0 {
		for _, s := range f.origins {
			o, _ := parseOrigin(s) // validate refused bad ones
			set[o] = true
		}
		return set
	}
	for _, in := range intents {
		if u, err := url.Parse(in.URL); err == nil {
			if o, ok := originOf(u); ok {
				set[o] = true
			}
		}
	}
	return set
}

// scopedCredentials is the request editor of resume: it adds creds only
// to a request whose origin is in scope, since it also sees the polls of
// operations that a 202 may have placed on another origin. scope is
// read through the pointer because it is known only once the intents are
// selected, after the client exists.
func scopedCredentials(creds http.Header, scope *originSet) func(context.Context, *http.Request) error {
	return func(_ context.Context, req *http.Request) error {
		if !scope.has(req.URL) {
			return nil
		}
		for name, values := range creds {
			req.Header[name] = slices.Clone(values) // attempts run concurrently
		}
		return nil
	}
}

// maxResumeRedirects is how many redirects one attempt follows, as
// net/http's default policy (a policy of our own replaces its limit).
const maxResumeRedirects = 10

// resumeHTTPClient is the library's default HTTP client with a redirect
// policy that drops the credential headers on a redirect to another
// origin: net/http copies every header onto a redirect, and the library
// drops only the secret ones (Authorization, Cookie), not any --header.
func resumeHTTPClient(creds http.Header) *http.Client {
	hc := cleanhttp.DefaultPooledClient()
	hc.Timeout = idem.DefaultAttemptTimeout
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxResumeRedirects {
			return errors.New("stopped after 10 redirects")
		}
		from, _ := originOf(via[0].URL)
		if to, ok := originOf(req.URL); !ok || to != from {
			for name := range creds {
				req.Header.Del(name)
			}
		}
		return nil
	}
	return hc
}
