package idem

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/idemkit/idem/internal/redact"
)

// defaultSecretParams are the query parameters that carry credentials in
// common APIs (OAuth's access_token, API keys); WithSecretQueryParams adds
// more.
var defaultSecretParams = redact.DefaultParams

// queryMark starts the name of a secret query parameter among an intent's
// secret names (keystore.Record.SecretHeaders), next to header names.
const queryMark = "?"

// WithSecretQueryParams marks more URL query parameters as secret, in
// addition to access_token, api_key, apikey, api-key, token,
// client_secret, password and secret (names match case-insensitively).
// A secret parameter is never written to the keystore: the stored URL
// goes without it, and it is kept in memory for this process, like a
// secret header, and required on every attempt.
func WithSecretQueryParams(names ...string) Option {
	return func(c *config) error {
		for _, n := range names {
			if n == "" {
				return errors.New("idem: WithSecretQueryParams: empty name")
			}
			c.secretParams[strings.ToLower(n)] = true
		}
		return nil
	}
}

// withoutSecretParams returns target without its secret query parameters,
// and those parameters (nil when there are none).
func (c *Client) withoutSecretParams(target string) (string, url.Values) {
	if !strings.Contains(target, "?") {
		return target, nil // no query: nothing to parse (a URL's query follows its first '?')
	}
	u, err := url.Parse(target)
	if err != nil || u.RawQuery == "" {
		return target, nil
	}
	q := u.Query()
	var secret url.Values
	for name, values := range q {
		if c.cfg.secretParams[strings.ToLower(name)] {
			if secret == nil {
				secret = url.Values{}
			}
			secret[name] = values
			q.Del(name)
		}
	}
	if secret == nil {
		return target, nil
	}
	u.RawQuery = q.Encode()
	return u.String(), secret
}

// withSecretParams adds params to req's URL query.
func withSecretParams(req *http.Request, params url.Values) {
	if len(params) == 0 {
		return
	}
	q := req.URL.Query()
	for name, values := range params {
		q[name] = values
	}
	req.URL.RawQuery = q.Encode()
}

// secretParamsOf returns the secret query parameters of req, by name.
func (c *Client) secretParamsOf(req *http.Request) url.Values {
	if req.URL == nil || req.URL.RawQuery == "" {
		return nil
	}
	var out url.Values
	for name, values := range req.URL.Query() {
		if len(values) > 0 && c.cfg.secretParams[strings.ToLower(name)] {
			if out == nil {
				out = url.Values{}
			}
			out[name] = values
		}
	}
	return out
}

// forgetSecrets drops everything this process keeps of key: its
// secrets, and whether it is unsent. Called once its intent is settled
// or expired, when nothing sends it again.
func (c *Client) forgetSecrets(key string) {
	c.local.forget(key)
}
