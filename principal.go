package idem

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// A Principal names who a request acts for (a tenant, an account): what
// the server scopes keys by. It is given the request of Begin, and of
// every attempt, with its credentials in place; "" means anonymous.
type Principal func(req *http.Request) (string, error)

// WithPrincipal sets how the client names the principal of a request.
// The principal scopes business names (two tenants may both begin
// "order-42/payment") and is checked before every attempt: an intent is
// never sent for another principal than it was begun for, since the
// server would take its key for a new intent there.
//
// Default: the principal is the request's credentials themselves, the
// values of its secret headers (Authorization, Proxy-Authorization,
// Cookie, WithSecretHeaders). Credentials that change while naming the
// same account (a rotated API key, an OAuth access token renewed every
// hour) then look like another principal: resuming with them is refused
// with ErrCredentialsMismatch, and a Begin with them starts new intents.
// Give WithPrincipal a function that names the account (from the token's
// claims, or a tenant id the caller knows) to avoid both.
func WithPrincipal(p Principal) Option {
	return func(c *config) error {
		if p == nil {
			return errors.New("idem: WithPrincipal: nil function")
		}
		c.principal = p
		return nil
	}
}

// WithPrincipalKey sets the key of the HMAC that turns a principal into the
// fingerprint the keystore holds, so that the keystore alone never tells
// who a principal is, nor lets anyone test guesses of a credential. Keep
// it out of the keystore (an environment secret, a KMS). It must stay the
// same for the keystore's whole life: another key makes every stored
// intent look like another principal's. At least 16 bytes. Default: a
// fixed key, which hides high-entropy credentials (API keys, tokens) but
// lets someone holding the keystore and this source test guesses of a
// weak password.
func WithPrincipalKey(key []byte) Option {
	return func(c *config) error {
		if len(key) < 16 {
			return fmt.Errorf("idem: WithPrincipalKey: %d bytes, need at least 16", len(key))
		}
		c.principalKey = slices.Clone(key)
		return nil
	}
}

// defaultPrincipalKey is the HMAC key without WithPrincipalKey.
var defaultPrincipalKey = []byte("idem principal fingerprint v1, default key")

// principalOf is the fingerprint of the principal req acts for ("" for
// anonymous) and the secret headers req carries, sorted.
func (c *Client) principalOf(req *http.Request) (string, []string, error) {
	var names []string
	for name, values := range req.Header {
		if len(values) > 0 && c.cfg.secretHeaders[http.CanonicalHeaderKey(name)] {
			names = append(names, http.CanonicalHeaderKey(name))
		}
	}
	params := c.secretParamsOf(req)
	for name := range params {
		names = append(names, queryMark+name)
	}
	slices.Sort(names)
	var identity string
	if c.cfg.principal != nil {
		id, err := c.cfg.principal(req)
		if err != nil {
			return "", nil, fmt.Errorf("idem: naming the principal: %w", err)
		}
		identity = "principal\x00" + id
		if id == "" {
			identity = ""
		}
	} else if len(names) > 0 {
		var b strings.Builder
		b.WriteString("credentials")
		for _, name := range names {
			values := req.Header.Values(name)
			if param, ok := strings.CutPrefix(name, queryMark); ok {
				values = params[param]
			}
			for _, v := range values {
				b.WriteString("\x00" + name + "\x00" + v)
			}
		}
		identity = b.String()
	}
	if identity == "" {
		return "", names, nil
	}
	mac := hmac.New(sha256.New, c.cfg.principalKey)
	mac.Write([]byte(identity))
	return hex.EncodeToString(mac.Sum(nil)[:16]), names, nil
}

// checkCredentials refuses an attempt whose credentials do not match the
// intent's: a secret header the intent was begun with is missing, or the
// principal differs. Nothing is sent then. An intent begun without a
// principal (no credentials, or WithPrincipal naming none) takes the
// credentials its attempts are given (WithRequestEditor).
func (c *Client) checkCredentials(req *http.Request, cl *call) error {
	var params url.Values
	for _, name := range cl.secretNames {
		if param, ok := strings.CutPrefix(name, queryMark); ok {
			if params == nil {
				params = req.URL.Query()
			}
			if !params.Has(param) {
				return fmt.Errorf("%w: query parameter %s is not set (the intent was begun with it); give it again with a Begin of the same name or WithRequestEditor", ErrCredentialsMissing, param)
			}
			continue
		}
		if len(req.Header.Values(name)) == 0 {
			return fmt.Errorf("%w: %s is not set (the intent was begun with it); give it again with a Begin of the same name or WithRequestEditor", ErrCredentialsMissing, name)
		}
	}
	if cl.principal == "" {
		return nil
	}
	got, _, err := c.principalOf(req)
	if err != nil {
		return err
	}
	if got != cl.principal {
		return fmt.Errorf("%w (the intent's principal %s, this attempt's %s)", ErrCredentialsMismatch, shortPrincipal(cl.principal), shortPrincipal(got))
	}
	return nil
}

// shortPrincipal shows a principal fingerprint in errors.
func shortPrincipal(p string) string {
	if p == "" {
		return "anonymous"
	}
	return p[:8]
}
