package idem

import (
	"net/url"
	"slices"
	"strings"

	"github.com/idemkit/idem/internal/redact"
)

// redactedValue stands in for a secret wherever a URL or an error is
// turned into text.
const redactedValue = redact.Value

// conventionallySecretParams are the query parameters OpenTelemetry's
// url.full asks to redact by default (signed URLs), beside the client's
// own secret parameters.
var conventionallySecretParams = []string{"awsaccesskeyid", "signature", "sig", "x-goog-signature"}

// isSecretParam reports whether a query parameter of this name is
// redacted from text: one of the client's secret parameters
// (WithSecretQueryParams), or a signature OpenTelemetry names.
func isSecretParam(name string, secret map[string]bool) bool {
	lower := strings.ToLower(name)
	return secret[lower] || slices.Contains(conventionallySecretParams, lower)
}

// redactURL is u as text that may be logged, stored or returned: without
// the password of its user information, and with the value of every
// secret query parameter replaced by REDACTED. Every path that turns a
// URL into text goes through it (or through redactError, for the URL a
// transport error carries).
func redactURL(u *url.URL, secret map[string]bool) string {
	if u == nil {
		return ""
	}
	out := *u
	if out.User != nil {
		if _, has := out.User.Password(); has {
			out.User = url.UserPassword(out.User.Username(), redactedValue)
		}
	}
	if out.RawQuery == "" {
		return out.String()
	}
	q := out.Query()
	changed := false
	for name, values := range q {
		if !isSecretParam(name, secret) {
			continue
		}
		for i := range values {
			values[i] = redactedValue
		}
		changed = true
	}
	if changed {
		out.RawQuery = q.Encode()
	}
	return out.String()
}

// redactURLString is redactURL of a URL in text; text that does not parse
// as a URL is returned with its secrets scrubbed as an error's would be
// (scrubValues), or whole when it holds none.
func redactURLString(raw string, secret map[string]bool) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return redactURL(u, secret)
}

// urlSecretValues are the values in u that text must never show: the values
// of its secret query parameters and the password of its user
// information. Empty values are left out (they would match everywhere).
func urlSecretValues(u *url.URL, secret map[string]bool) []string {
	if u == nil {
		return nil
	}
	var out []string
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			out = append(out, p)
		}
	}
	if u.RawQuery == "" {
		return out
	}
	for name, values := range u.Query() {
		if !isSecretParam(name, secret) {
			continue
		}
		for _, v := range values {
			if v != "" {
				out = append(out, v, url.QueryEscape(v))
			}
		}
	}
	return out
}

// scrubValues replaces every occurrence of a value in text by REDACTED.
func scrubValues(text string, values []string) string {
	for _, v := range values {
		if v != "" && strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, redactedValue)
		}
	}
	return text
}

// scrubText is text without the values given nor the value of any secret
// query parameter it shows ("?api_key=…" or "&token=…" in a URL written
// into a message).
func scrubText(text string, values []string, secret map[string]bool) string {
	return redactQueryText(scrubValues(text, values), secret)
}

// redactQueryText replaces, in free text, the value of every secret query
// parameter written as part of a URL (after '?' or '&') by REDACTED. It
// is the last guard of text the client stores or logs: whatever wrote a
// URL into a message (a request editor's error, a server's Location), the
// secret does not survive it.
func redactQueryText(text string, secret map[string]bool) string {
	if strings.IndexByte(text, '=') < 0 {
		return text
	}
	return redact.QueryText(text, func(name string) bool { return isSecretParam(name, secret) })
}

// redactError returns err, a transport error of a request to u, as it
// may be logged, stored in LastError or returned: a *url.Error (what
// http.Client.Do returns) gets a copy whose URL is redacted (redactURL),
// and any text in it that still shows one of u's secrets (a Location the
// server echoed, a custom RoundTripper's message) is scrubbed. The
// errors it wraps stay reachable for errors.Is and errors.As (a timeout
// is still a timeout), but its text never shows a secret. err is
// returned as it is when u carries no secret.
func redactError(err error, u *url.URL, secret map[string]bool) error {
	if err == nil {
		return nil
	}
	values := urlSecretValues(u, secret)
	if ue, ok := err.(*url.Error); ok {
		out := &url.Error{Op: ue.Op, URL: scrubValues(redactURLString(ue.URL, secret), values), Err: ue.Err}
		if ue.Err != nil {
			if text := ue.Err.Error(); scrubText(text, values, secret) != text {
				out.Err = &scrubbedError{text: scrubText(text, values, secret), err: ue.Err}
			}
		}
		return out
	}
	if text := err.Error(); scrubText(text, values, secret) != text {
		return &scrubbedError{text: scrubText(text, values, secret), err: err}
	}
	return err
}

// scrubbedError is an error whose text had a secret in it: it says the
// text without the secret, and unwraps to the original error so
// errors.Is and errors.As still see what it was.
type scrubbedError struct {
	text string
	err  error
}

func (e *scrubbedError) Error() string { return e.text }
func (e *scrubbedError) Unwrap() error { return e.err }

// Timeout and Temporary keep what a net.Error says of the wrapped error,
// as *url.Error does.
func (e *scrubbedError) Timeout() bool {
	t, ok := e.err.(interface{ Timeout() bool })
	return ok && t.Timeout()
}

func (e *scrubbedError) Temporary() bool {
	t, ok := e.err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}
