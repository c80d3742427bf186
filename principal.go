package idem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idemkit/idem/keystore"
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
// intent look like another principal's, and a Begin of its name fails
// with ErrIdentityAmbiguous. At least 16 bytes.
//
// Default: a key the keystore keeps (keystore.PrincipalKeyKeeper: the
// bbolt and memory keystores), random for a new keystore, so that no two
// keystores fingerprint a credential alike and no table of fingerprints
// of common passwords serves for all of them; a keystore that already
// holds records without one (written by an earlier build) keeps the fixed
// key those were fingerprinted under, so their names still resolve. A
// keystore that keeps none (Postgres) uses the fixed key. Either way the
// key lies beside the records: it hides high-entropy credentials (API
// keys, tokens) but lets someone holding the keystore test guesses of a
// weak password. Against that, give a key kept elsewhere here.
func WithPrincipalKey(key []byte) Option {
	return func(c *config) error {
		if len(key) < 16 {
			return fmt.Errorf("idem: WithPrincipalKey: %d bytes, need at least 16", len(key))
		}
		c.principalKey = slices.Clone(key)
		c.principalKeyGiven = true
		return nil
	}
}

// defaultPrincipalKey is the HMAC key without WithPrincipalKey of a
// keystore that keeps none, and the key earlier builds fingerprinted
// every principal under.
var defaultPrincipalKey = []byte("idem principal fingerprint v1, default key")

// principalKeyWait bounds New's read (or first write) of the keystore's
// principal key.
const principalKeyWait = 30 * time.Second

// keystorePrincipalKey sets the principal key to the one the keystore
// keeps, unless WithPrincipalKey gave one (see WithPrincipalKey).
func (c *config) keystorePrincipalKey() error {
	keeper, ok := c.store.(keystore.PrincipalKeyKeeper)
	if c.principalKeyGiven || !ok {
		return nil
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return fmt.Errorf("idem: drawing a principal key: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), principalKeyWait)
	defer cancel()
	key, err := keeper.PrincipalKey(ctx, fresh, defaultPrincipalKey)
	if err != nil {
		return fmt.Errorf("idem: reading the keystore's principal key: %w", err)
	}
	c.principalKey = key
	return nil
}

// principalOf is the fingerprint of the principal req acts for ("" for
// anonymous) and the secret headers req carries, sorted.
func (c *Client) principalOf(req *http.Request) (string, []string, error) {
	names, params := c.secretNamesOf(req.Header, req)
	if c.cfg.principal != nil {
		id, err := c.cfg.principal(req)
		if err != nil {
			return "", nil, fmt.Errorf("idem: naming the principal: %w", err)
		}
		if id == "" {
			return "", names, nil
		}
		const tag = "principal\x00"
		msg := append(macStart(c.cfg.principalKey, len(tag)+len(id)), tag...)
		return macFinish(c.cfg.principalKey, append(msg, id...)), names, nil
	}
	return c.credentialsPrincipal(req.Header, params, names), names, nil
}

// secretNamesOf lists the secret headers in header and the secret query
// parameters of req's URL (marked with queryMark), sorted, with those
// parameters' values.
func (c *Client) secretNamesOf(header http.Header, req *http.Request) ([]string, url.Values) {
	params := c.secretParamsOf(req)
	return c.secretNames(header, params), params
}

// secretNames lists the secret headers in header and the secret query
// parameters params (marked with queryMark), sorted.
func (c *Client) secretNames(header http.Header, params url.Values) []string {
	var names []string
	for name, values := range header {
		if len(values) > 0 && c.cfg.secretHeaders[http.CanonicalHeaderKey(name)] {
			names = append(names, http.CanonicalHeaderKey(name))
		}
	}
	for name := range params {
		names = append(names, queryMark+name)
	}
	slices.Sort(names)
	return names
}

// credentialsPrincipal is the default principal: a fingerprint of the
// values of the secrets names, found in header and params; "" for none.
func (c *Client) credentialsPrincipal(header http.Header, params url.Values, names []string) string {
	if len(names) == 0 {
		return ""
	}
	// The identity: "credentials", then NUL, name, NUL, value for every
	// value of every secret, names sorted.
	const tag = "credentials"
	size := len(tag)
	for _, name := range names {
		for _, v := range secretValues(header, params, name) {
			size += 2 + len(name) + len(v)
		}
	}
	var stack [256]byte // the usual identity fits: no allocation
	start := stack[:]
	if sha256.BlockSize+size > len(stack) {
		start = make([]byte, 0, sha256.BlockSize+size)
	}
	msg := append(macStartIn(start, c.cfg.principalKey), tag...)
	for _, name := range names {
		for _, v := range secretValues(header, params, name) {
			msg = append(msg, 0)
			msg = append(msg, name...)
			msg = append(msg, 0)
			msg = append(msg, v...)
		}
	}
	return macFinish(c.cfg.principalKey, msg)
}

// secretValues are the values of the secret name (a header in header,
// or a query parameter in params, marked with queryMark).
func secretValues(header http.Header, params url.Values, name string) []string {
	if param, ok := strings.CutPrefix(name, queryMark); ok {
		return params[param]
	}
	return header.Values(name)
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
	if cl.principal == "" || cl.principalProven {
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
