package idemtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/idemkit/idem/dialect"
)

// dialectRules is what a provider documents beyond its dialect.Dialect
// values: whether it requires a key and whether it refuses a changed
// payload under a used key (rather than returning the first answer).
type dialectRules struct {
	requireKey   bool
	fingerprints bool
	// replayOK200: a repeat of a 201 is answered 200 with the same body
	// (PayPal: "If the resource was already created by a previous
	// execution of the same method ... the server returns 200 OK").
	replayOK200 bool
}

// documentedRules holds each shipped dialect's documented semantics, as
// the reference server simulates them (internal/testserver/dialect_*.go).
var documentedRules = map[string]dialectRules{
	"draft":  {requireKey: true, fingerprints: true},
	"stripe": {requireKey: false, fingerprints: true},
	// "If no key is provided, Stripe automatically generates a UUID for
	// you" (https://docs.stripe.com/api-v2-overview#idempotency); a
	// changed payload under a used key is an idempotency_error
	// (https://docs.stripe.com/api/idempotent_requests).
	"stripe-v2": {requireKey: false, fingerprints: true},
	"adyen":     {requireKey: false, fingerprints: false},
	"paypal":    {requireKey: false, fingerprints: false, replayOK200: true},
	"square":    {requireKey: true, fingerprints: true},
	// Checkout.com: the key is optional and "Subsequent requests with the
	// same key will return the same HTTP status code and response body as
	// the original request"
	// (https://www.checkout.com/docs/payments/manage-payments/idempotency).
	"checkout": {requireKey: false, fingerprints: false},
}

// lookupDialect returns the dialect to grade against: Draft for "" and
// for "idem", this project's name for the draft's profile.
func lookupDialect(name string) (dialect.Dialect, dialectRules, error) {
	if name == "" || strings.EqualFold(name, "idem") {
		name = "draft"
	}
	d, err := dialect.ByName(name)
	if err != nil {
		return dialect.Dialect{}, dialectRules{}, err
	}
	rules, ok := documentedRules[d.Name]
	if !ok {
		rules = dialectRules{requireKey: true, fingerprints: true}
	}
	return d, rules, nil
}

// isDraft reports whether the run grades the draft's own vocabulary
// (statuses, problem documents) rather than a provider's.
func (c *conformanceConfig) isDraft() bool { return c.dialect.Name == "draft" }

// classify judges e as the dialect's client would.
func (c *conformanceConfig) classify(e exchange) dialect.Verdict {
	a := dialect.Answer{Method: http.MethodPost, Status: e.status, Header: e.header}
	if !e.success() {
		a.Body = e.body
		if len(a.Body) > dialect.BodyPeek {
			a.Body = a.Body[:dialect.BodyPeek]
		}
	}
	return c.dialect.Classify(a)
}

// repeats reports whether e repeats the answer want, as the dialect
// replays it: same status (or PayPal's 200 for a 201), same body.
func (c *conformanceConfig) repeats(e, want exchange) bool {
	if c.rules.replayOK200 && want.status == http.StatusCreated && e.status == http.StatusOK {
		e.status = want.status
	}
	return e.sameAnswer(want)
}

// keyHeader sets the key header lines of a header dialect: valid keys in
// the run's key form, raw ones exactly as given.
func (c *conformanceConfig) keyHeader(req *http.Request, keys []string, raw bool) {
	if keys == nil || c.dialect.KeyHeader == "" {
		return
	}
	if c.quoted && !raw {
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = dialect.QuoteKey(k)
		}
		keys = quoted
	}
	// Set directly so that an empty value and repeated lines are sent
	// exactly as given.
	req.Header[http.CanonicalHeaderKey(c.dialect.KeyHeader)] = keys
}

// keyBody returns the body with the key member of a body-field dialect
// (the first key only: a body holds one member of a name).
func (c *conformanceConfig) keyBody(keys []string, body []byte) []byte {
	if keys == nil || c.dialect.KeyField == "" {
		return body
	}
	return withMember(body, c.dialect.KeyField, keys[0])
}

// withMember returns a JSON object body with member name set to value in
// front of its other members; a body that is not an object is returned
// unchanged (the server will refuse it, which the checks report).
func withMember(body []byte, name, value string) []byte {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) < 2 || trimmed[0] != '{' {
		return body
	}
	member, _ := json.Marshal(map[string]string{name: value}) // a string map always marshals
	rest := bytes.TrimSpace(trimmed[1:])
	out := append([]byte(nil), member[:len(member)-1]...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}
